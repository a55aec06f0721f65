/**
 * Notification bodies (receiveNotification's `body`, or a webhook request's
 * JSON), parsed once where they enter msgflow — the poll loop, the webhook
 * receiver, the dashboard's Run now — into a typed {@link Notification}:
 * the engine reads typed fields from there on. A body comes from the
 * network, so the parse is lenient: a field that is missing or of another
 * type is absent, never an error, and the body is kept whole as received.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isNotificationType, type ReceivedBody } from '../../api/notifications.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A notification as msgflow reads it. */
export interface Notification {
  /** Its type, whatever it is (the service sends more types than msgflow reads). */
  readonly typeWebhook: string;
  /** The body, typed, when msgflow reads its type (NOTIFICATION_TYPES); undefined for another type. */
  readonly body?: ReceivedBody;
  /** The message it is about, for any type that carries `idMessage`. */
  readonly idMessage?: string;
  /** Its own time, ms (`timestamp` is in seconds); undefined when absent. */
  readonly timestampMs?: number;
  /** `instanceData.idInstance` as text: which instance sent it (a webhook receiver routes by it). */
  readonly idInstance?: string;
  /** The body as received, whole: what flows see as `event` (see {@link eventOf}). */
  readonly raw: Readonly<Obj>;
}

// Lenient field readers: a field of another type is absent, not an error.
const opt = <T extends z.ZodType>(s: T) => s.optional().catch(undefined);
const text = opt(z.string());
const num = opt(z.number());
const bool = opt(z.boolean());
const obj = <S extends z.ZodRawShape>(shape: S) => opt(z.object(shape));

const Base = {
  instanceData: obj({ idInstance: num, wid: text, typeInstance: text }),
  timestamp: num,
};

const MessageData = obj({
  typeMessage: text,
  textMessageData: obj({ textMessage: text }),
  extendedTextMessageData: obj({
    text,
    description: text,
    title: text,
    previewType: text,
    jpegThumbnail: text,
    forwardingScore: num,
    isForwarded: bool,
  }),
  fileMessageData: obj({
    downloadUrl: text,
    caption: text,
    fileName: text,
    jpegThumbnail: text,
    mimeType: text,
    isAnimated: bool,
    forwardingScore: num,
    isForwarded: bool,
  }),
  quotedMessage: obj({ stanzaId: text, participant: text, typeMessage: text, textMessage: text }),
  locationMessageData: obj({ latitude: num, longitude: num, nameLocation: text, address: text, jpegThumbnail: text }),
  contactMessageData: obj({ displayName: text, vcard: text }),
  // The kinds the service documents beyond the spec's list: what flows read of them.
  pollMessageData: obj({ stanzaId: text, name: text, multipleAnswers: bool }),
  interactiveButtons: obj({ header: text, body: text, footer: text }),
  interactiveButtonsReply: obj({ header: text, body: text, footer: text }),
  buttonsResponseMessage: obj({ stanzaId: text, selectedButtonId: text, selectedButtonText: text }),
  listResponseMessage: obj({ stanzaId: text, title: text, singleSelectReply: text }),
  templateButtonReplyMessage: obj({ stanzaId: text, selectedId: text, selectedDisplayText: text }),
});

const message = <T extends string>(type: T) =>
  z.object({
    ...Base,
    typeWebhook: z.literal(type),
    idMessage: text,
    senderData: obj({ chatId: text, chatName: text, sender: text, senderName: text, senderContactName: text }),
    messageData: MessageData,
  });

/** One lenient schema per type msgflow reads (src/api/notifications.ts has the types). */
const KnownBody = z.discriminatedUnion('typeWebhook', [
  message('incomingMessageReceived'),
  message('outgoingMessageReceived'),
  message('outgoingAPIMessageReceived'),
  z.object({
    ...Base,
    typeWebhook: z.literal('outgoingMessageStatus'),
    chatId: text,
    idMessage: text,
    status: text,
    description: text,
    sendByApi: bool,
  }),
  z.object({ ...Base, typeWebhook: z.literal('stateInstanceChanged'), stateInstance: text }),
  z.object({ ...Base, typeWebhook: z.literal('incomingCall'), from: text, status: text, idMessage: text }),
  z.object({ ...Base, typeWebhook: z.literal('incomingBlock'), chatId: text, chatState: text }),
  z.object({
    ...Base,
    typeWebhook: z.literal('quotaExceeded'),
    quotaData: obj({ method: text, used: num, total: num, status: text, description: text }),
  }),
  z.object({
    ...Base,
    typeWebhook: z.literal('deviceInfo'),
    deviceData: obj({ platform: text, deviceManufacturer: text, deviceModel: text, osVersion: text, waVersion: text, battery: num }),
  }),
]);

/**
 * The notification in `v`, or undefined when `v` is not one (not an object,
 * or no non-empty `typeWebhook`): a webhook request is refused, a received
 * one deleted without effect.
 */
export function parseNotification(v: unknown): Notification | undefined {
  if (!isObj(v) || typeof v.typeWebhook !== 'string' || v.typeWebhook.length === 0) return undefined;
  const body: ReceivedBody | undefined = isNotificationType(v.typeWebhook) ? KnownBody.parse(v) : undefined;
  const data = v.instanceData;
  const id = isObj(data) ? data.idInstance : undefined;
  return {
    typeWebhook: v.typeWebhook,
    ...(body ? { body } : {}),
    ...(typeof v.idMessage === 'string' ? { idMessage: v.idMessage } : {}),
    ...(typeof v.timestamp === 'number' && Number.isFinite(v.timestamp) ? { timestampMs: v.timestamp * 1000 } : {}),
    ...(id === undefined ? {} : { idInstance: String(id) }),
    raw: v,
  };
}

/** The chat a notification is about: the sender's chat for messages, the recipient's for statuses. */
export function chatIdOf(n: Notification): string | undefined {
  const b = n.body;
  if (b?.typeWebhook === 'outgoingMessageStatus' || b?.typeWebhook === 'incomingBlock') return b.chatId;
  if (b?.typeWebhook === 'incomingCall') return b.from;
  return b && 'senderData' in b ? b.senderData?.chatId : undefined;
}

/**
 * The message's text, by kind: plain text; an extended or quoting text (the
 * reply, not the quoted one); a reaction's emoji; a file's caption; a poll's
 * question; a pressed button's or chosen row's text; a buttons message's body.
 * Undefined for a message without text (a location, a contact, a vote).
 */
export function textOf(n: Notification): string | undefined {
  const md = n.body && 'messageData' in n.body ? n.body.messageData : undefined;
  if (!md || md.typeMessage === 'pollUpdateMessage') return undefined;
  return (
    md.textMessageData?.textMessage ??
    md.extendedTextMessageData?.text ??
    md.fileMessageData?.caption ??
    md.buttonsResponseMessage?.selectedButtonText ??
    md.templateButtonReplyMessage?.selectedDisplayText ??
    md.listResponseMessage?.title ??
    md.interactiveButtons?.body ??
    md.interactiveButtonsReply?.body ??
    md.pollMessageData?.name
  );
}

/** The message's kind (`messageData.typeMessage`), for the message notifications. */
export function typeMessageOf(n: Notification): string | undefined {
  const md = n.body && 'messageData' in n.body ? n.body.messageData : undefined;
  return md?.typeMessage;
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
export function notificationKey(n: Notification): string {
  if (n.idMessage !== undefined) {
    // A message's statuses, and a call's offer and its end, share the id: each is its own notification.
    const b = n.body;
    const status = b?.typeWebhook === 'outgoingMessageStatus' || b?.typeWebhook === 'incomingCall' ? b.status : undefined;
    return `${n.typeWebhook}:${n.idMessage}${status !== undefined ? `:${status}` : ''}`;
  }
  return `${n.typeWebhook}:${createHash('sha256').update(stableJson(n.raw)).digest('hex').slice(0, 24)}`;
}

/**
 * The body as flows see it (`event`) and runs store it: the instance id is
 * removed from `instanceData` (ids never reach run records, pages or logs)
 * and the configured instance name is added as `instance`.
 */
export function eventOf(n: Notification, instanceName: string): Record<string, unknown> {
  const out: Obj = { ...n.raw, instance: instanceName };
  if (isObj(n.raw.instanceData)) {
    const { idInstance: _id, ...rest } = n.raw.instanceData;
    out.instanceData = rest;
  }
  return out;
}
