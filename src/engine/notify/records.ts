/**
 * What the notification consumer keeps in the store, per instance identity,
 * for the actions that need it: each outgoing message's last status
 * (files.broadcast learns `failed`/`noAccount` exactly), the latest incoming
 * messages of each chat (waitForReply), and which instances have a consumer
 * at all. Each write touches one record.
 */
import type { DurableState, EngineStore } from '../../store/types.js';
import { INCOMING_NS, OUTGOING_STATUS_NS, sharedState } from '../shared.js';
import { chatIdOf, textOf, type Notification } from './body.js';

// The namespaces these records live in are declared in engine/shared.ts (INCOMING_NS, OUTGOING_STATUS_NS, CONSUMERS_NS, OPT_OUT_NS).

/** Incoming messages kept per chat: waitForReply needs the first one after its reference point, not a history. */
export const INCOMING_KEPT = 20;

export interface OutgoingStatusRecord {
  chatId?: string;
  /** sent | delivered | read | failed | noAccount | notInGroup | yellowCard, as the service says. */
  status: string;
  /** The service's reason (e.g. why a file could not be fetched). */
  description?: string;
  /** The notification's time, ms. */
  at: number;
}

export interface IncomingMessage {
  idMessage: string;
  /**
   * Its place in the chat: 1, 2, 3... in the order the consumer recorded the
   * chat's messages (the order the service delivered them). What decides
   * whether a message came after another, never `at`.
   */
  seq: number;
  /** The message's time on the service, ms (whole seconds). */
  at: number;
  typeMessage?: string;
  /** Text, extended text or caption; undefined for other messages. */
  text?: string;
  senderName?: string;
}

export interface IncomingChatRecord {
  /** In the order recorded (oldest first), at most INCOMING_KEPT. */
  messages: IncomingMessage[];
  /** The seq of the last message recorded (0: none yet): the chat's position now. */
  lastSeq: number;
}

export interface ConsumerRecord {
  instance: string;
  mode: 'poll' | 'webhook';
  /** Since when (ms) statuses and incoming messages of this instance are recorded. */
  since: number;
}

/** The key of a chat on the instance's opt-out list (OPT_OUT_NS). */
export const optOutKey = (identity: string, chatId: string) => `${identity}:${chatId}`;

export interface OptOutRecord {
  at: number;
  /** The run that added it. */
  runId?: string;
}

/** Statuses after which nothing else comes. */
export const FAILED_STATUSES: readonly string[] = ['failed', 'noAccount', 'notInGroup', 'yellowCard'];
const RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3 };
const rank = (s: string) => RANK[s] ?? (FAILED_STATUSES.includes(s) ? 10 : 0);

type Received<T extends string> = Notification & { body: Extract<NonNullable<Notification['body']>, { typeWebhook: T }> };

async function recordStatus(kv: DurableState, identity: string, n: Received<'outgoingMessageStatus'>, now: number): Promise<void> {
  const { status, description } = n.body;
  if (n.idMessage === undefined || status === undefined) return;
  const key = `${identity}:${n.idMessage}`;
  const prev = await kv.get<OutgoingStatusRecord>(key);
  // A redelivered older notification must not move a status back.
  if (prev && rank(prev.status) > rank(status)) return;
  const rec: OutgoingStatusRecord = { status, at: n.timestampMs ?? now };
  const chatId = chatIdOf(n);
  if (chatId !== undefined) rec.chatId = chatId;
  if (description !== undefined) rec.description = description;
  await kv.set(key, rec);
}

/**
 * The record as stored: one written before messages had a `seq` (sorted by
 * time, oldest first) gets 1, 2, 3... in that stored order.
 */
function chatRecord(stored: Partial<IncomingChatRecord> | undefined): IncomingChatRecord {
  const messages = stored?.messages ?? [];
  if (stored?.lastSeq !== undefined) return { messages, lastSeq: stored.lastSeq };
  return { messages: messages.map((m, i) => ({ ...m, seq: i + 1 })), lastSeq: messages.length };
}

async function readChat(kv: DurableState, identity: string, chatId: string): Promise<IncomingChatRecord> {
  return chatRecord(await kv.get<Partial<IncomingChatRecord>>(`${identity}:${chatId}`));
}

async function recordIncoming(kv: DurableState, identity: string, n: Received<'incomingMessageReceived'>, now: number): Promise<void> {
  const id = n.idMessage;
  const chatId = chatIdOf(n);
  if (id === undefined || chatId === undefined) return;
  const rec = await readChat(kv, identity, chatId);
  if (rec.messages.some((m) => m.idMessage === id)) return;
  // Appended in the order delivered: a late or mis-stamped message keeps its place after those recorded before it.
  const msg: IncomingMessage = { idMessage: id, seq: rec.lastSeq + 1, at: n.timestampMs ?? now };
  const typeMessage = n.body.messageData?.typeMessage;
  if (typeMessage !== undefined) msg.typeMessage = typeMessage;
  const text = textOf(n);
  if (text !== undefined) msg.text = text;
  const senderName = n.body.senderData?.senderName;
  if (senderName !== undefined) msg.senderName = senderName;
  await kv.set(`${identity}:${chatId}`, {
    messages: [...rec.messages, msg].slice(-INCOMING_KEPT),
    lastSeq: msg.seq,
  } satisfies IncomingChatRecord);
}

/** Records what actions read from a notification (before it is acknowledged). */
export async function recordNotification(store: EngineStore, identity: string, n: Notification, now: number): Promise<void> {
  const { body } = n;
  if (body?.typeWebhook === 'outgoingMessageStatus')
    await recordStatus(sharedState(store, OUTGOING_STATUS_NS), identity, { ...n, body }, now);
  else if (body?.typeWebhook === 'incomingMessageReceived')
    await recordIncoming(sharedState(store, INCOMING_NS), identity, { ...n, body }, now);
}

/**
 * Where a wait for a reply counts from: after a place in the chat's recorded
 * order (`afterSeq`), or, when a flow asks for a time, from the messages the
 * service stamped at or after `fromMs` (to the second, the service's
 * precision). `exclude` (the message that started the run) never counts.
 */
export interface ReplyFrom {
  afterSeq?: number;
  fromMs?: number;
  exclude?: string;
}

/** The chat's position now: the seq of its last recorded message (0 when none). */
export async function chatPosition(kv: DurableState, identity: string, chatId: string): Promise<number> {
  return (await readChat(kv, identity, chatId)).lastSeq;
}

/** The seq of a recorded incoming message of the chat, or undefined when the chat has none with that id. */
export async function recordedSeq(kv: DurableState, identity: string, chatId: string, idMessage: string): Promise<number | undefined> {
  return (await readChat(kv, identity, chatId)).messages.find((m) => m.idMessage === idMessage)?.seq;
}

/** The chat's first recorded incoming message that counts from `from`, in recorded order. */
export async function firstReply(
  kv: DurableState,
  identity: string,
  chatId: string,
  from: ReplyFrom,
): Promise<IncomingMessage | undefined> {
  const { messages } = await readChat(kv, identity, chatId);
  const floor = from.fromMs === undefined ? undefined : Math.floor(from.fromMs / 1000) * 1000;
  return messages.find(
    (m) => m.idMessage !== from.exclude && (from.afterSeq === undefined || m.seq > from.afterSeq) && (floor === undefined || m.at >= floor),
  );
}
