/**
 * What one event does to a dialog's session: PURE (the session, the event
 * and the dialog in; the next session, what to send and what else to do
 * out). The runtime (actions/dialog.ts) only loads the session, sends what
 * this says, records the effects and stores the session.
 *
 * Order of a message's handling: a message already applied changes nothing;
 * a handed-over chat stays quiet; without a live session, the opener starts
 * one (entering the start state); in a session, the global commands first
 * (restart, back, stop, operator), then the state's transitions in order (the
 * first matching wins), then its fallback.
 */
import type { Conversation, DialogState, Fallback, SendSpec, Transition } from './schema.js';
import type { DialogMessage } from './message.js';
import { isLive, withLine, type EndReason, type Session } from './session.js';
import { parseValue, type ValueParsers } from './validators.js';
import { textPattern } from '../text-pattern.js';

/** What a dialog asks the runtime to send, in order. */
export type DialogSend =
  | { method: 'sendMessage'; message: string }
  | { method: 'sendInteractiveButtonsReply'; body: string; buttons: { buttonId: string; buttonText: string }[] }
  | { method: 'sendFileByUrl'; urlFile: string; fileName: string; caption?: string };

/**
 * What happened in the chat: a message, or its idle time came. `handover` is
 * the chat's handover in force (engine/conversation/handover.ts), read by the
 * runtime: while there is one, the dialog is quiet.
 */
export type DialogEvent = ({ kind: 'message'; message: DialogMessage } | { kind: 'idle'; chatId: string }) & {
  handover?: { until?: number };
};

/** What happened, in a word (the step's output, `msgflow sessions`, the dashboard). */
export type Outcome = 'duplicate' | 'ignored' | 'quiet' | 'started' | 'moved' | 'stayed' | 'fallback' | 'command' | 'ended';

export interface Advance {
  /** The session to store; undefined: nothing to store (an ignored message, a duplicate). */
  session: Session | undefined;
  sends: DialogSend[];
  outcome: Outcome;
  /** States entered, in order. */
  entered: string[];
  /** The chat asked to stop: the runtime puts it on the opt-out list. */
  optOut?: boolean;
  /** The chat is handed to a human for this long (ms). */
  handover?: { forMs: number; by: 'dialog' | 'command' };
}

export interface AdvanceContext {
  now: number;
  flow: string;
  /** Evaluates `${{ }}` templates in a value against a scope (the engine's evaluateTemplate). */
  render(value: unknown, scope: Record<string, unknown>): unknown;
  parsers: ValueParsers;
}

/** The working state of one advance: the session being changed and what goes out. */
interface Work {
  s: Session;
  sends: DialogSend[];
  entered: string[];
  ended?: EndReason;
  handover?: Advance['handover'];
  value?: unknown;
  message?: DialogMessage;
}

const matches = (pattern: string | null | undefined, text: string | undefined): boolean =>
  pattern != null && text !== undefined && textPattern(pattern).test(text.trim());

const FILE_KINDS = new Set(['image', 'video', 'document', 'audio', 'sticker']);

/** Applies one event to the session. */
export function advance(dialog: Conversation, prev: Session | undefined, ev: DialogEvent, x: AdvanceContext): Advance {
  if (ev.kind === 'idle') return idle(dialog, prev, ev, x);
  const m = ev.message;
  if (prev?.lastMessage === m.id) return { session: undefined, sends: [], outcome: 'duplicate', entered: [] };
  const live = isLive(prev, x.now) && !expired(dialog, prev, x.now) ? prev : undefined;
  if (ev.handover) {
    // A human has the chat: the message is seen, nothing is answered, and silence counts from the handover's end.
    if (!live) return { session: undefined, sends: [], outcome: 'quiet', entered: [] };
    const quiet = { ...live, status: 'handover' as const, ...(ev.handover.until === undefined ? {} : { quietUntil: ev.handover.until }) };
    return { session: touch(dialog, quiet, m, x.now), sends: [], outcome: 'quiet', entered: [] };
  }
  if (!live) {
    if (dialog.opener !== undefined && !matches(dialog.opener, m.text))
      return { session: undefined, sends: [], outcome: 'ignored', entered: [] };
    const w = work(fresh(x, m.chatId), m);
    enter(dialog, w, dialog.start, x, false);
    return finish(dialog, w, 'started', x);
  }
  const w = work({ ...live, status: 'active', quietUntil: undefined }, m);
  const command = applyCommand(dialog, w, m, x);
  if (command) return finish(dialog, w, 'command', x);
  const state = dialog.states[w.s.state];
  const t = state?.on.find((t) => transitionMatches(t, m, w, x.parsers));
  if (t) return finish(dialog, w, applyTransition(dialog, w, t, x), x);
  return finish(dialog, w, state?.fallback ? applyFallback(dialog, w, state.fallback, x) : 'stayed', x);
}

function fresh(x: AdvanceContext, chatId: string): Session {
  return {
    flow: x.flow,
    chatId,
    state: '',
    vars: {},
    history: [],
    misses: 0,
    status: 'active',
    startedAt: x.now,
    updatedAt: x.now,
    seq: 0,
    recent: [],
  };
}

function work(s: Session, m: DialogMessage): Work {
  return { s: { ...s, vars: { ...s.vars }, history: [...s.history] }, sends: [], entered: [], message: m };
}

function expired(dialog: Conversation, s: Session, now: number): boolean {
  return dialog.expire !== undefined && now - s.startedAt >= dialog.expire;
}

/** A message seen: counted, remembered as the last applied, its line kept. */
function touch(dialog: Conversation, s: Session, m: DialogMessage, now: number): Session {
  s.seq += 1;
  s.lastMessage = m.id;
  s.updatedAt = now;
  s.recent = withLine(s.recent, { from: 'user', text: m.text ?? `(${m.typeMessage ?? m.kind})`, at: now });
  if (dialog.idle && s.status !== 'ended')
    s.idleAt = Math.max(now, s.status === 'handover' ? (s.quietUntil ?? now) : now) + dialog.idle.after;
  return s;
}

function finish(dialog: Conversation, w: Work, outcome: Outcome, x: AdvanceContext): Advance {
  const s = w.message ? touch(dialog, w.s, w.message, x.now) : { ...w.s, updatedAt: x.now };
  for (const send of w.sends) s.recent = withLine(s.recent, { from: 'bot', text: lineOf(send), at: x.now });
  if (w.ended) {
    s.status = 'ended';
    s.endReason = w.ended;
    delete s.idleAt;
    delete s.quietUntil;
  } else if (w.handover) {
    s.status = 'handover';
    s.quietUntil = x.now + w.handover.forMs;
  }
  // A handed-over chat's silence is the human's: the idle time counts from the end of the handover.
  if (s.status === 'handover' && dialog.idle && s.quietUntil !== undefined)
    s.idleAt = Math.max(s.idleAt ?? 0, s.quietUntil + dialog.idle.after);
  const out: Advance = { session: s, sends: w.sends, outcome: w.ended && outcome !== 'command' ? 'ended' : outcome, entered: w.entered };
  if (w.ended === 'stop') out.optOut = true;
  if (w.handover && !w.ended) out.handover = w.handover;
  return out;
}

function lineOf(send: DialogSend): string {
  if (send.method === 'sendMessage') return send.message;
  if (send.method === 'sendInteractiveButtonsReply') return `${send.body} [${send.buttons.map((b) => b.buttonText).join('] [')}]`;
  return `(file) ${send.fileName}`;
}

/** The scope of a dialog's templates: `session` (state, vars, chatId), `message`, `value`. */
function scopeOf(w: Work): Record<string, unknown> {
  const { state, vars, chatId, startedAt } = w.s;
  const m = w.message;
  return {
    session: { state, vars, chatId, startedAt },
    ...(m
      ? { message: { id: m.id, text: m.text, kind: m.kind, typeMessage: m.typeMessage, choices: m.choices, senderName: m.senderName } }
      : {}),
    ...(w.value === undefined ? {} : { value: w.value }),
  };
}

/** Queues what a state, a transition, a fallback or the idle timeout sends, rendered: its file first, then its text (or buttons). */
function say(w: Work, spec: SendSpec, x: AdvanceContext): void {
  const r = (v: string) => String(x.render(v, scopeOf(w)) ?? '');
  if (spec.file) {
    const caption = spec.file.caption === undefined ? {} : { caption: r(spec.file.caption) };
    w.sends.push({ method: 'sendFileByUrl', urlFile: r(spec.file.url), fileName: r(spec.file.fileName), ...caption });
  }
  if (spec.say !== undefined && spec.buttons) {
    const buttons = spec.buttons.map((b) => ({ buttonId: b.id, buttonText: r(b.text) }));
    w.sends.push({ method: 'sendInteractiveButtonsReply', body: r(spec.say), buttons });
  } else if (spec.say !== undefined) w.sends.push({ method: 'sendMessage', message: r(spec.say) });
}

/** Enters a state: it sends what it sends, then hands over or ends when it says so. */
function enter(dialog: Conversation, w: Work, name: string, x: AdvanceContext, remember = true): void {
  if (remember && w.s.state !== '') w.s.history = [...w.s.history, w.s.state].slice(-dialog.history);
  w.s.state = name;
  w.s.misses = 0;
  w.entered.push(name);
  const state: DialogState | undefined = dialog.states[name];
  if (!state) return;
  say(w, state, x);
  if (state.handover) handover(dialog, w, x, 'dialog');
  if (state.end) w.ended = 'end';
}

function handover(dialog: Conversation, w: Work, x: AdvanceContext, by: 'dialog' | 'command'): void {
  if (dialog.handover.say !== undefined) say(w, { say: dialog.handover.say }, x);
  w.handover = { forMs: dialog.handover.for, by };
}

/** The global commands: true when the message was one. */
function applyCommand(dialog: Conversation, w: Work, m: DialogMessage, x: AdvanceContext): boolean {
  const c = dialog.commands;
  if (matches(c.stop, m.text)) {
    w.ended = 'stop';
    return true;
  }
  if (matches(c.restart, m.text)) {
    w.s.vars = {};
    w.s.history = [];
    enter(dialog, w, dialog.start, x, false);
    return true;
  }
  if (matches(c.back, m.text)) {
    const previous = w.s.history.pop();
    enter(dialog, w, previous ?? w.s.state, x, false);
    return true;
  }
  if (matches(c.operator, m.text)) {
    handover(dialog, w, x, 'command');
    return true;
  }
  return false;
}

/** Whether every condition of the transition holds; an `expect:` leaves its parsed value in `w.value`. */
function transitionMatches(t: Transition, m: DialogMessage, w: Work, parsers: ValueParsers): boolean {
  if (t.text !== undefined && !matches(t.text, m.text)) return false;
  if (t.button !== undefined) {
    const wanted = (typeof t.button === 'string' ? [t.button] : t.button).map((b) => b.toLowerCase());
    if (!m.choices.some((c) => wanted.includes(c.toLowerCase()))) return false;
  }
  if (t.type !== undefined) {
    const kinds = typeof t.type === 'string' ? [t.type] : t.type;
    if (!kinds.some((k) => k === m.kind || (k === 'file' && FILE_KINDS.has(m.kind)))) return false;
  }
  if (t.expect !== undefined) {
    const v = parseValue(parsers, t.expect, m.text);
    if (v === undefined) return false;
    w.value = v;
  }
  return true;
}

function setVars(w: Work, set: Record<string, unknown> | undefined, x: AdvanceContext): void {
  if (!set) return;
  const scope = scopeOf(w);
  for (const [k, v] of Object.entries(set)) w.s.vars[k] = x.render(v, scope);
}

function applyTransition(dialog: Conversation, w: Work, t: Transition, x: AdvanceContext): Outcome {
  w.s.misses = 0;
  setVars(w, t.set, x);
  if (t.say !== undefined) say(w, { say: t.say }, x);
  if (t.handover) handover(dialog, w, x, 'dialog');
  if (t.goto !== undefined) enter(dialog, w, t.goto, x);
  if (t.end) w.ended ??= 'end';
  return t.goto !== undefined ? 'moved' : 'stayed';
}

function applyFallback(dialog: Conversation, w: Work, f: Fallback, x: AdvanceContext): Outcome {
  w.s.misses += 1;
  if (w.s.misses <= f.retries) {
    say(w, f, x);
    return 'fallback';
  }
  if (f.handover) handover(dialog, w, x, 'dialog');
  if (f.goto !== undefined) enter(dialog, w, f.goto, x);
  else if (!f.handover) w.ended = 'fallback';
  return f.goto !== undefined ? 'moved' : 'fallback';
}

/**
 * The idle timeout of a session: it ends, saying the idle goodbye; a session
 * that moved on since is left alone; a handed-over one waits for the handover
 * to end (its idle time moves past it).
 */
function idle(dialog: Conversation, prev: Session | undefined, ev: DialogEvent, x: AdvanceContext): Advance {
  if (!dialog.idle || !prev || prev.status === 'ended' || prev.idleAt === undefined || prev.idleAt > x.now) {
    return { session: undefined, sends: [], outcome: 'stayed', entered: [] };
  }
  if (ev.handover) {
    const idleAt = Math.max(x.now, ev.handover.until ?? x.now) + dialog.idle.after;
    return { session: { ...prev, status: 'handover', idleAt, updatedAt: x.now }, sends: [], outcome: 'quiet', entered: [] };
  }
  const w: Work = { s: { ...prev, vars: { ...prev.vars } }, sends: [], entered: [] };
  say(w, dialog.idle, x);
  w.ended = 'idle';
  return finish(dialog, w, 'ended', x);
}
