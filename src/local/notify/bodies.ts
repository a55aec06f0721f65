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
