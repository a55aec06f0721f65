/**
 * Notification bodies in the service's published formats, built from the
 * local service's messages. Pure: the caller passes the time and the
 * instance's identity.
 */
import type {
  IncomingMessageReceived,
  InstanceData,
  InstanceState,
  NotificationMessageData,
  OutgoingAPIMessageReceived,
  OutgoingMessageReceived,
  OutgoingMessageStatus,
  OutgoingStatus,
  StateInstanceChanged,
} from '../../api/notifications.js';
import type { Message } from '../../api/types.js';

export interface Origin {
  instanceData: InstanceData;
  /** ms since the epoch. */
  now: number;
}

function stamp(o: Origin) {
  return { instanceData: o.instanceData, timestamp: Math.floor(o.now / 1000) };
}

/** messageData of a message: typeMessage and the one data member it names. */
export function messageDataOf(m: Message): NotificationMessageData {
  const d: NotificationMessageData = { typeMessage: m.typeMessage };
  if (m.typeMessage === 'textMessage') d.textMessageData = { textMessage: m.textMessage ?? '' };
  else if (m.typeMessage === 'extendedTextMessage')
    d.extendedTextMessageData = { text: m.extendedTextMessageData?.text ?? m.textMessage ?? '' };
  else if (m.downloadUrl !== undefined) {
    d.fileMessageData = {
      downloadUrl: m.downloadUrl,
      caption: m.caption ?? '',
      fileName: m.fileName ?? '',
      jpegThumbnail: m.jpegThumbnail ?? '',
      mimeType: m.mimeType ?? '',
      ...(m.isAnimated !== undefined ? { isAnimated: m.isAnimated } : {}),
    };
  } else if (m.location) d.locationMessageData = { latitude: m.location.latitude, longitude: m.location.longitude };
  else if (m.contact) d.contactMessageData = { displayName: m.contact.displayName, vcard: m.contact.vcard };
  if (m.quotedMessage)
    d.quotedMessage = { stanzaId: m.quotedMessage.stanzaId, participant: m.quotedMessage.participant, typeMessage: 'textMessage' };
  return d;
}

export function incomingBody(m: Message, o: Origin): IncomingMessageReceived {
  const sender = m.senderId ?? m.chatId;
  return {
    typeWebhook: 'incomingMessageReceived',
    ...stamp(o),
    idMessage: m.idMessage,
    senderData: {
      chatId: m.chatId,
      chatName: m.senderName ?? '',
      sender,
      senderName: m.senderName ?? '',
      senderContactName: m.senderContactName ?? '',
    },
    messageData: messageDataOf(m),
  };
}

/** A message of ours: sent through the API (outgoingAPIMessageReceived) or from the phone (outgoingMessageReceived). */
export function outgoingBody<T extends 'outgoingAPIMessageReceived' | 'outgoingMessageReceived'>(
  type: T,
  m: Message,
  o: Origin,
): T extends 'outgoingAPIMessageReceived' ? OutgoingAPIMessageReceived : OutgoingMessageReceived {
  const body = {
    typeWebhook: type,
    ...stamp(o),
    idMessage: m.idMessage,
    senderData: { chatId: m.chatId, chatName: '', sender: o.instanceData.wid, senderName: '', senderContactName: '' },
    messageData: messageDataOf(m),
  };
  return body as unknown as T extends 'outgoingAPIMessageReceived' ? OutgoingAPIMessageReceived : OutgoingMessageReceived;
}

export function statusBody(
  s: { chatId: string; idMessage: string; status: OutgoingStatus; description?: string },
  o: Origin,
): OutgoingMessageStatus {
  const body: OutgoingMessageStatus = {
    typeWebhook: 'outgoingMessageStatus',
    ...stamp(o),
    chatId: s.chatId,
    idMessage: s.idMessage,
    status: s.status,
    sendByApi: true,
  };
  if (s.description !== undefined) body.description = s.description;
  return body;
}

export function stateBody(stateInstance: InstanceState, o: Origin): StateInstanceChanged {
  return { typeWebhook: 'stateInstanceChanged', ...stamp(o), stateInstance };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
/** The fields of `o` that are defined, under the names given. */
const picked = (o: unknown, names: Record<string, string>): Obj =>
  isObj(o) ? Object.fromEntries(Object.entries(names).flatMap(([to, from]) => (o[from] === undefined ? [] : [[to, o[from]]]))) : {};

/** messageData → the message-input fields of its kind (the inverse of {@link messageDataOf}). */
function contentOf(md: Obj): Obj {
  const type = md.typeMessage;
  const ext = isObj(md.extendedTextMessageData) ? md.extendedTextMessageData : {};
  const out: Obj = { typeMessage: type };
  if (type === 'textMessage') Object.assign(out, picked(md.textMessageData, { textMessage: 'textMessage' }));
  else if (type === 'extendedTextMessage') Object.assign(out, picked(ext, { textMessage: 'text' }));
  else if (type === 'reactionMessage') Object.assign(out, picked(ext, { reaction: 'text' }));
  else if (isObj(md.fileMessageData)) {
    const names = {
      downloadUrl: 'downloadUrl',
      caption: 'caption',
      fileName: 'fileName',
      jpegThumbnail: 'jpegThumbnail',
      mimeType: 'mimeType',
    };
    Object.assign(out, picked(md.fileMessageData, { ...names, isAnimated: 'isAnimated' }));
  } else if (type === 'locationMessage') out.location = picked(md.locationMessageData, { latitude: 'latitude', longitude: 'longitude' });
  else if (type === 'contactMessage') out.contact = picked(md.contactMessageData, { displayName: 'displayName', vcard: 'vcard' });
  else if (type === 'pollMessage') out.pollMessageData = md.pollMessageData;
  if (isObj(md.quotedMessage)) out.quotedMessage = picked(md.quotedMessage, { stanzaId: 'stanzaId', participant: 'participant' });
  return out;
}

/**
 * The message a notification body tells of (incomingMessageReceived, or
 * outgoingMessageReceived: one sent from the phone), in the form the admin
 * `incoming` endpoint takes: the inverse of {@link incomingBody} and
 * {@link outgoingBody}. The service stamps it when it arrives (the body's
 * `timestamp` and `instanceData` are the sender's, not kept); what the body
 * does not say (chatType, names) follows the service's own rules. Validated
 * by the endpoint, which names a field that does not fit.
 */
export function messageInputOf(body: Obj): Obj {
  const sd = isObj(body.senderData) ? body.senderData : {};
  const outgoing = body.typeWebhook === 'outgoingMessageReceived';
  const sender = outgoing ? {} : picked(sd, { senderId: 'sender', senderContactName: 'senderContactName' });
  const name = !outgoing && typeof sd.senderName === 'string' && sd.senderName !== '' ? { senderName: sd.senderName } : {};
  return {
    chatId: sd.chatId,
    type: outgoing ? 'outgoing' : 'incoming',
    ...(typeof body.idMessage === 'string' ? { idMessage: body.idMessage } : {}),
    ...sender,
    ...name,
    ...contentOf(isObj(body.messageData) ? body.messageData : {}),
  };
}
