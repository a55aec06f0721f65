/**
 * Did a send whose answer never came (the process was killed during the call,
 * the answer was lost) reach the service? Its message is looked for where
 * the service keeps what it accepted: the send queue (showMessagesQueue)
 * while it waits there, then the chat's history once sent. Shared by
 * files.broadcast's reconciliation and the BullMQ take-over of a writing
 * item whose worker died.
 *
 * What a lookup can conclude: the message is there (`found`); it is in
 * neither (`absent`: had the service accepted it, it would be queued, or sent
 * and in the history within the journal lag, so once that lag has passed it
 * never reached the service); or nothing (`unknown`: the queue could not be
 * read).
 */
import type { InstanceApi, Message, QueuedMessage } from '../api/types.js';

/** The send being looked for. */
export interface SendShape {
  chatId: string;
  /** sendMessage's text. */
  message?: string;
  /** sendFileByUrl's file name and caption. */
  fileName?: string;
  caption?: string;
  /** When the send was about to leave (ms): its message cannot be older, give or take `clockSkewMs`. */
  since: number;
}

export type SendLookup = { found: { idMessage: string; sentAt: number; message?: Message } } | { absent: true } | { unknown: true };

export interface SendLookupOptions {
  /** Tolerated difference between msgflow's clock and the service's timestamps, ms. */
  clockSkewMs: number;
  /** idMessages other records already own: never taken for this one. */
  claimed?: ReadonlySet<string>;
  signal?: AbortSignal;
}

/**
 * How long a message the service sent may take to appear in the chat
 * history (its journal): the service documents up to 2 minutes.
 */
export const DEFAULT_JOURNAL_LAG_MS = 120_000;

/** The shape of a sendMessage or sendFileByUrl request; undefined for another method. */
export function sendShape(method: string, request: unknown, since: number): SendShape | undefined {
  const r = (request ?? {}) as Record<string, unknown>;
  if (typeof r.chatId !== 'string') return undefined;
  if (method === 'sendMessage' && typeof r.message === 'string') return { chatId: r.chatId, message: r.message, since };
  if (method === 'sendFileByUrl' && typeof r.fileName === 'string') {
    return { chatId: r.chatId, fileName: r.fileName, caption: typeof r.caption === 'string' ? r.caption : '', since };
  }
  return undefined;
}

function sameContent(s: SendShape, text: string | undefined, fileName: string | undefined, caption: string | undefined): boolean {
  if (s.message !== undefined) return text === s.message;
  return (fileName ?? '') === s.fileName && (caption ?? '') === (s.caption ?? '');
}

function historyMatch(m: Message, s: SendShape, o: SendLookupOptions): boolean {
  return (
    m.type === 'outgoing' &&
    m.chatId === s.chatId &&
    !o.claimed?.has(m.idMessage) &&
    m.timestamp * 1000 >= s.since - o.clockSkewMs &&
    sameContent(s, m.textMessage, m.fileName, m.caption)
  );
}

function queueMatch(q: QueuedMessage, s: SendShape, o: SendLookupOptions): boolean {
  const type = s.message !== undefined ? 'sendMessage' : 'sendFileByUrl';
  return (
    q.type === type &&
    q.body.chatId === s.chatId &&
    !o.claimed?.has(q.messageID) &&
    sameContent(s, q.body.message, q.body.fileName, q.body.caption)
  );
}

/**
 * Looks for the send's message: the queue is read first, then the history,
 * so that a message leaving the queue meanwhile is seen in one or the other.
 */
export async function lookForSend(client: InstanceApi, s: SendShape, o: SendLookupOptions): Promise<SendLookup> {
  const queue = await client.showMessagesQueue({}, { signal: o.signal }).catch(() => undefined);
  const hist = await client.getChatHistory({ chatId: s.chatId, count: 100 }, { signal: o.signal }).catch(() => undefined);
  const m = hist?.find((x) => historyMatch(x, s, o));
  if (m) return { found: { idMessage: m.idMessage, sentAt: m.timestamp * 1000, message: m } };
  const q = queue?.find((x) => queueMatch(x, s, o));
  if (q) return { found: { idMessage: q.messageID, sentAt: s.since } };
  return queue && hist ? { absent: true } : { unknown: true };
}
