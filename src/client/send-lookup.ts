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
  /**
   * What the message carries, as {@link contentKey} makes it from the
   * request: compared with the same key made from a journal's message or a
   * queued request, so every kind matches by the fields the service keeps.
   */
  content: string;
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

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const rec = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {});

/**
 * The content key of a sending request (`method`: the method that sends it,
 * or the queue's `type`, which is sendFileByUrl for an upload too); undefined
 * for a method whose message cannot be told apart from another's. A file is
 * its name and caption, a poll its question and options, a location its
 * coordinates, a contact its number, buttons their body: what both the
 * queue's request and the journal's message keep.
 */
export function contentKey(method: string, body: Record<string, unknown>): string | undefined {
  switch (method) {
    case 'sendMessage':
      return typeof body.message === 'string' ? `text\n${body.message}` : undefined;
    case 'sendFileByUrl':
    case 'sendFileByUpload':
      return typeof body.fileName === 'string' ? `file\n${body.fileName}\n${str(body.caption)}` : undefined;
    case 'sendPoll': {
      const options = Array.isArray(body.options) ? body.options.map((o) => str(rec(o).optionName)) : [];
      return `poll\n${str(body.message)}\n${options.join('\n')}`;
    }
    case 'sendLocation':
      return `location\n${Number(body.latitude)}\n${Number(body.longitude)}`;
    case 'sendContact':
      return `contact\n${Number(rec(body.contact).phoneContact)}`;
    case 'sendInteractiveButtons':
      return `buttons\n${str(body.body)}`;
    case 'sendInteractiveButtonsReply':
      return `buttons-reply\n${str(body.body)}`;
    default:
      return undefined;
  }
}

/** The content key of a message in a journal (see {@link contentKey}); undefined for a kind msgflow does not send. */
function messageKey(m: Message): string | undefined {
  if (m.pollMessageData) return contentKey('sendPoll', { message: m.pollMessageData.name, options: m.pollMessageData.options ?? [] });
  if (m.location) return contentKey('sendLocation', m.location as unknown as Record<string, unknown>);
  if (m.contact) return contentKey('sendContact', { contact: { phoneContact: m.contact.phoneNumber ?? phoneOfVcard(m.contact.vcard) } });
  if (m.interactiveButtons) return contentKey('sendInteractiveButtons', { body: m.interactiveButtons.body });
  if (m.interactiveButtonsReply) return contentKey('sendInteractiveButtonsReply', { body: m.interactiveButtonsReply.body });
  if (m.fileName !== undefined) return contentKey('sendFileByUrl', { fileName: m.fileName, caption: m.caption ?? '' });
  const text = m.textMessage ?? m.extendedTextMessageData?.text;
  return text === undefined ? undefined : contentKey('sendMessage', { message: text });
}

/** A vCard's first phone number, digits only (`TEL;…:+7 900…`), as a number. */
function phoneOfVcard(vcard: string | undefined): number | undefined {
  const tel = /TEL[^:]*:([^\r\n]+)/i.exec(vcard ?? '');
  const digits = tel?.[1]?.replace(/\D/g, '');
  return digits ? Number(digits) : undefined;
}

/** The shape of a sending request (see {@link contentKey}); undefined for another method. */
export function sendShape(method: string, request: unknown, since: number): SendShape | undefined {
  const r = rec(request);
  if (typeof r.chatId !== 'string') return undefined;
  const content = contentKey(method, r);
  return content === undefined ? undefined : { chatId: r.chatId, content, since };
}

function historyMatch(m: Message, s: SendShape, o: SendLookupOptions): boolean {
  return (
    m.type === 'outgoing' &&
    m.chatId === s.chatId &&
    !o.claimed?.has(m.idMessage) &&
    m.timestamp * 1000 >= s.since - o.clockSkewMs &&
    messageKey(m) === s.content
  );
}

function queueMatch(q: QueuedMessage, s: SendShape, o: SendLookupOptions): boolean {
  return q.body.chatId === s.chatId && !o.claimed?.has(q.messageID) && contentKey(q.type, q.body) === s.content;
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
