/**
 * A dialog's session: one durable record per (instance, chat, dialog) in the
 * shared namespace `dialog-sessions`, keyed `${identity}|${flow}|${chatId}`.
 * It is kept small (a few hundred bytes as JSON): bounded history, the last
 * few lines of the chat clipped, no copy of the messages.
 */

/** Why a session ended. */
export type EndReason = 'end' | 'idle' | 'expired' | 'stop' | 'restart' | 'fallback' | 'reset';

/** One line of the chat as the session remembers it (the dashboard and `msgflow sessions show`). */
export interface SessionLine {
  /** `user`: the chat wrote it; `bot`: the dialog sent it. */
  from: 'user' | 'bot';
  /** The text, clipped to {@link LINE_MAX} characters (a file: its name; another message: its kind). */
  text: string;
  at: number;
}

export interface Session {
  flow: string;
  chatId: string;
  /** The state the session is in (the last one entered). */
  state: string;
  /** `session.vars` of the dialog's templates: what its transitions `set:`. */
  vars: Record<string, unknown>;
  /** States visited before the current one, oldest first, bounded by the dialog's `history` (what `back` pops). */
  history: string[];
  /** Messages of the current state no transition matched (the fallback's count). */
  misses: number;
  /** `active`; `handover`: a human has the chat until `quietUntil`; `ended`. */
  status: 'active' | 'handover' | 'ended';
  endReason?: EndReason;
  startedAt: number;
  updatedAt: number;
  /** Messages applied to the session, each once: a message whose id is `lastMessage` is not applied again. */
  seq: number;
  lastMessage?: string;
  /** A handed-over chat is quiet until then (ms). */
  quietUntil?: number;
  /** The session ends for silence at this time (ms), when the dialog has `idle:`. */
  idleAt?: number;
  /** The last lines of the chat, oldest first (at most {@link RECENT_MAX}). */
  recent: SessionLine[];
}

/** The typeWebhook of the event the idle sweeper starts a dialog's run with (never a service's notification type). */
export const DIALOG_IDLE_EVENT = 'dialogIdle';

export const RECENT_MAX = 6;
export const LINE_MAX = 80;

/** The key of a session in its namespace. */
export function sessionKey(identity: string, flow: string, chatId: string): string {
  return `${identity}|${flow}|${chatId}`;
}

/** `line` appended to `recent`, clipped, the oldest dropped past {@link RECENT_MAX}. */
export function withLine(recent: readonly SessionLine[], line: SessionLine): SessionLine[] {
  const text = line.text.length > LINE_MAX ? `${line.text.slice(0, LINE_MAX - 1)}…` : line.text;
  return [...recent, { ...line, text }].slice(-RECENT_MAX);
}

/** Whether the session is live at `now`: not ended, not past its idle time. */
export function isLive(s: Session | undefined, now: number): s is Session {
  return s !== undefined && s.status !== 'ended' && (s.idleAt === undefined || s.idleAt > now);
}

/** A live session's idle deadline, kept apart from the session so the sweeper reads only these. */
export interface IdleTimer {
  /** When the session ends for silence, ms. */
  at: number;
  flow: string;
  /** The config name of the instance (the run the sweeper starts talks to it). */
  instance: string;
  chatId: string;
  /** The session's `seq` when the timer was set: a later message moved it (and the timer) on. */
  seq: number;
}
