/**
 * What the notification consumer keeps in the store, per instance identity,
 * for the actions that need it: each outgoing message's last status
 * (files.broadcast learns `failed`/`noAccount` exactly), the latest incoming
 * messages of each chat (waitForReply), and which instances have a consumer
 * at all. Each write touches one record.
 */
import type { DurableState, EngineStore } from '../../store/types.js';
import { chatIdOf, idMessageOf, textOf, timestampMs, type NotificationLike } from './body.js';

const fieldsOf = (n: NotificationLike) => n as unknown as Record<string, unknown>;

/**
 * The store namespace of `ctx.shared(ns)` (see unit-runner.ts): the consumer
 * writes where actions (and plugins) read with `ctx.shared(ns)`.
 */
export function sharedState(store: Pick<EngineStore, 'kv'>, ns: string): DurableState {
  return store.kv(`shared:${ns}`);
}

/** The namespaces below are `ctx.shared()` names. */

/** `${identity}:${idMessage}` -> {@link OutgoingStatusRecord}. */
export const OUTGOING_STATUS_NS = 'outgoing-status';
/** `${identity}:${chatId}` -> {@link IncomingChatRecord}. */
export const INCOMING_NS = 'incoming';
/** `${identity}` -> {@link ConsumerRecord}: the instance's notifications are consumed since `since`. */
export const CONSUMERS_NS = 'notification-consumers';
/** `${identity}:${chatId}` -> {@link OptOutRecord}: the chat is never broadcast to. */
export const OPT_OUT_NS = 'opt-out';

/** Incoming messages kept per chat: waitForReply needs the first one after its wait began, not a history. */
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
  /** The message's time on the service, ms. */
  at: number;
  typeMessage?: string;
  /** Text, extended text or caption; undefined for other messages. */
  text?: string;
  senderName?: string;
}

export interface IncomingChatRecord {
  /** Oldest first, at most INCOMING_KEPT. */
  messages: IncomingMessage[];
}

export interface ConsumerRecord {
  instance: string;
  mode: 'poll' | 'webhook';
  /** Since when (ms) statuses and incoming messages of this instance are recorded. */
  since: number;
}

export interface OptOutRecord {
  at: number;
  /** The run that added it. */
  runId?: string;
}

/** Statuses after which nothing else comes. */
export const FAILED_STATUSES: readonly string[] = ['failed', 'noAccount', 'notInGroup', 'yellowCard'];
const RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3 };
const rank = (s: string) => RANK[s] ?? (FAILED_STATUSES.includes(s) ? 10 : 0);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

async function recordStatus(kv: DurableState, identity: string, n: NotificationLike, now: number): Promise<void> {
  const body = fieldsOf(n);
  const id = idMessageOf(n);
  if (id === undefined || typeof body.status !== 'string') return;
  const key = `${identity}:${id}`;
  const prev = await kv.get<OutgoingStatusRecord>(key);
  // A redelivered older notification must not move a status back.
  if (prev && rank(prev.status) > rank(body.status)) return;
  const rec: OutgoingStatusRecord = { status: body.status, at: timestampMs(n) ?? now };
  const chatId = chatIdOf(n);
  if (chatId !== undefined) rec.chatId = chatId;
  if (typeof body.description === 'string') rec.description = body.description;
  await kv.set(key, rec);
}

async function recordIncoming(kv: DurableState, identity: string, n: NotificationLike, now: number): Promise<void> {
  const body = fieldsOf(n);
  const id = idMessageOf(n);
  const chatId = chatIdOf(n);
  if (id === undefined || chatId === undefined) return;
  const key = `${identity}:${chatId}`;
  const rec = (await kv.get<IncomingChatRecord>(key)) ?? { messages: [] };
  if (rec.messages.some((m) => m.idMessage === id)) return;
  const msg: IncomingMessage = { idMessage: id, at: timestampMs(n) ?? now };
  const md = body.messageData;
  if (isObj(md) && typeof md.typeMessage === 'string') msg.typeMessage = md.typeMessage;
  const text = textOf(n);
  if (text !== undefined) msg.text = text;
  const sd = body.senderData;
  if (isObj(sd) && typeof sd.senderName === 'string') msg.senderName = sd.senderName;
  rec.messages = [...rec.messages, msg].sort((a, b) => a.at - b.at).slice(-INCOMING_KEPT);
  await kv.set(key, rec);
}

/** Records what actions read from a notification (before it is acknowledged). */
export async function recordNotification(store: EngineStore, identity: string, body: NotificationLike, now: number): Promise<void> {
  if (body.typeWebhook === 'outgoingMessageStatus') await recordStatus(sharedState(store, OUTGOING_STATUS_NS), identity, body, now);
  else if (body.typeWebhook === 'incomingMessageReceived') await recordIncoming(sharedState(store, INCOMING_NS), identity, body, now);
}

/** The first incoming message of the chat at or after `since` (ms; compared by whole seconds, the service's precision). */
export async function firstReplySince(
  kv: DurableState,
  identity: string,
  chatId: string,
  since: number,
): Promise<IncomingMessage | undefined> {
  const rec = await kv.get<IncomingChatRecord>(`${identity}:${chatId}`);
  const floor = Math.floor(since / 1000) * 1000;
  return rec?.messages.find((m) => m.at >= floor);
}
