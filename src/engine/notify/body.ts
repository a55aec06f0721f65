/**
 * Reading the service's notification bodies (receiveNotification's `body`,
 * or a webhook request's JSON): the few fields the engine needs, read
 * defensively because a body comes from the network.
 */
import { createHash } from 'node:crypto';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A notification body as received (src/api/notifications.ts describes the
 * formats): `typeWebhook`, `timestamp` (seconds) and the fields of its type,
 * all read defensively here.
 */
export interface NotificationLike {
  readonly typeWebhook: string;
}

const fields = (body: NotificationLike): Obj => body as unknown as Obj;

/** Whether a value looks like a notification body (a webhook request is checked with it before it is acknowledged). */
export function isNotificationLike(v: unknown): v is NotificationLike {
  return isObj(v) && typeof v.typeWebhook === 'string' && v.typeWebhook.length > 0;
}

/** The chat a notification is about: the sender's chat for incoming messages, the recipient's for statuses. */
export function chatIdOf(n: NotificationLike): string | undefined {
  const body = fields(n);
  return str(isObj(body.senderData) ? body.senderData.chatId : undefined) ?? str(body.chatId);
}

export function idMessageOf(n: NotificationLike): string | undefined {
  return str(fields(n).idMessage);
}

/** The message's text: plain text, extended text, or a file's caption; undefined for other messages. */
export function textOf(n: NotificationLike): string | undefined {
  const md = fields(n).messageData;
  if (!isObj(md)) return undefined;
  const pick = (k: string, f: string) => (isObj(md[k]) ? str((md[k] as Obj)[f]) : undefined);
  return pick('textMessageData', 'textMessage') ?? pick('extendedTextMessageData', 'text') ?? pick('fileMessageData', 'caption');
}

/** The notification's own time, ms (its `timestamp` is in seconds); undefined when absent. */
export function timestampMs(n: NotificationLike): number | undefined {
  const body = fields(n);
  return typeof body.timestamp === 'number' && Number.isFinite(body.timestamp) ? body.timestamp * 1000 : undefined;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/**
 * What makes a notification the same one when it is delivered again (after a
 * crash before deleteNotification, or a webhook retried): its type and
 * message id (plus the status, for status changes), else a hash of the whole
 * body. Never the receiptId alone: a webhook has none, and the same
 * notification must dedupe the same way whichever channel brought it.
 */
export function notificationKey(n: NotificationLike): string {
  const body = fields(n);
  const id = idMessageOf(n);
  if (id !== undefined) return `${n.typeWebhook}:${id}${typeof body.status === 'string' ? `:${body.status}` : ''}`;
  return `${n.typeWebhook}:${createHash('sha256').update(stableJson(body)).digest('hex').slice(0, 24)}`;
}

/**
 * The body as flows see it (`event`) and runs store it: the instance id is
 * removed from `instanceData` (ids never reach run records, pages or logs)
 * and the configured instance name is added as `instance`.
 */
export function eventOf(n: NotificationLike, instanceName: string): Record<string, unknown> {
  const body = fields(n);
  const out: Obj = { ...body, instance: instanceName };
  if (isObj(body.instanceData)) {
    const { idInstance: _id, ...rest } = body.instanceData;
    out.instanceData = rest;
  }
  return out;
}
