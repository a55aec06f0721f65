/**
 * Notification bodies in the service's published formats, built from the
 * local service's messages. Pure: the caller passes the time and the
 * instance's identity.
 */
import type {
  IncomingBlock,
  IncomingCall,
  IncomingMessageReceived,
  InstanceData,
  InstanceState,
  NotificationMessageData,
  OutgoingAPIMessageReceived,
  OutgoingMessageReceived,
  OutgoingMessageStatus,
  OutgoingStatus,
  QuotaExceeded,
  QuotaExceededData,
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

/** Whether a message was forwarded, as every message data member repeats it. */
function forwarding(m: Message) {
  return { forwardingScore: m.forwardingScore ?? 0, isForwarded: m.isForwarded ?? false };
}

function fileData(m: Message): NotificationMessageData['fileMessageData'] {
  return {
    downloadUrl: m.downloadUrl ?? '',
    caption: m.caption ?? '',
    fileName: m.fileName ?? '',
    jpegThumbnail: m.jpegThumbnail ?? '',
    mimeType: m.mimeType ?? '',
    ...(m.isAnimated !== undefined ? { isAnimated: m.isAnimated } : {}),
    ...forwarding(m),
  };
}

type DataOf = (m: Message) => Partial<NotificationMessageData>;

const FILE_KIND: DataOf = (m) => ({ fileMessageData: fileData(m) });

/** The data member of each typeMessage, as the service's notification formats give it. */
const DATA_OF: Partial<Record<string, DataOf>> = {
  textMessage: (m) => ({ textMessageData: { textMessage: m.textMessage ?? '' } }),
  extendedTextMessage: (m) => {
    const p = m.extendedTextMessage;
    const text = m.extendedTextMessageData?.text ?? m.textMessage ?? '';
    const preview = p ? { description: p.description, title: p.title, previewType: p.previewType, jpegThumbnail: p.jpegThumbnail } : {};
    return { extendedTextMessageData: { text, ...preview, ...forwarding(m) } };
  },
  // A text quoting a message: the quote's id and author beside the text.
  quotedMessage: (m) => ({
    extendedTextMessageData: {
      text: m.textMessage ?? '',
      stanzaId: m.quotedMessage?.stanzaId ?? '',
      participant: m.quotedMessage?.participant ?? '',
    },
  }),
  reactionMessage: (m) => ({ extendedTextMessageData: { text: m.extendedTextMessageData?.text ?? '' } }),
  imageMessage: FILE_KIND,
  videoMessage: FILE_KIND,
  documentMessage: FILE_KIND,
  audioMessage: FILE_KIND,
  stickerMessage: FILE_KIND,
  locationMessage: (m) => {
    const { forwardingScore: _s, isForwarded: _f, ...l } = m.location ?? { latitude: 0, longitude: 0 };
    return { locationMessageData: { nameLocation: '', address: '', jpegThumbnail: '', ...l, ...forwarding(m) } };
  },
  contactMessage: (m) => ({
    contactMessageData: { displayName: m.contact?.displayName ?? '', vcard: m.contact?.vcard ?? '', ...forwarding(m) },
  }),
  contactsArrayMessage: (m) => ({ messageData: { contacts: m.contacts ?? [], ...forwarding(m) } }),
  pollMessage: (m) => ({
    pollMessageData: {
      name: m.pollMessageData?.name ?? '',
      options: m.pollMessageData?.options ?? [],
      multipleAnswers: m.pollMessageData?.multipleAnswers ?? false,
    },
  }),
  pollUpdateMessage: (m) => ({
    pollMessageData: {
      stanzaId: m.pollMessageData?.stanzaId ?? '',
      name: m.pollMessageData?.name ?? '',
      votes: m.pollMessageData?.votes ?? [],
      multipleAnswers: m.pollMessageData?.multipleAnswers ?? false,
    },
  }),
  interactiveButtons: (m) => (m.interactiveButtons ? { interactiveButtons: m.interactiveButtons } : {}),
  interactiveButtonsReply: (m) => (m.interactiveButtonsReply ? { interactiveButtonsReply: m.interactiveButtonsReply } : {}),
  buttonsResponseMessage: (m) => (m.buttonsResponseMessage ? { buttonsResponseMessage: m.buttonsResponseMessage } : {}),
  listResponseMessage: (m) => (m.listResponseMessage ? { listResponseMessage: m.listResponseMessage } : {}),
  templateButtonReplyMessage: (m) => (m.templateButtonReplyMessage ? { templateButtonReplyMessage: m.templateButtonReplyMessage } : {}),
  buttonsMessage: (m) => (m.buttonsMessage ? { buttonsMessage: { ...m.buttonsMessage, ...forwarding(m) } } : {}),
  listMessage: (m) => (m.listMessage ? { listMessage: { ...m.listMessage, ...forwarding(m) } } : {}),
  templateMessage: (m) => (m.templateMessage ? { templateMessage: { ...m.templateMessage, ...forwarding(m) } } : {}),
  groupInviteMessage: (m) => (m.groupInviteMessageData ? { groupInviteMessageData: m.groupInviteMessageData } : {}),
};

/**
 * messageData of a message: typeMessage and the one data member it names,
 * plus `quotedMessage` when it quotes one (a reaction: only the reacted
 * message's id and author).
 */
export function messageDataOf(m: Message): NotificationMessageData {
  const d: NotificationMessageData = { typeMessage: m.typeMessage, ...DATA_OF[m.typeMessage]?.(m) };
  if (m.quotedMessage) {
    d.quotedMessage =
      m.typeMessage === 'reactionMessage'
        ? { stanzaId: m.quotedMessage.stanzaId, participant: m.quotedMessage.participant }
        : { ...structuredClone(m.quotedMessage), typeMessage: m.quotedMessage.typeMessage ?? 'textMessage' };
  }
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

export function callBody(c: { from: string; status: IncomingCall['status']; idMessage: string }, o: Origin): IncomingCall {
  return { from: c.from, typeWebhook: 'incomingCall', ...stamp(o), status: c.status, idMessage: c.idMessage };
}

/** A contact blocked the account: the documented body, `chatState: blocked`. */
export function blockBody(chatId: string, o: Origin): IncomingBlock {
  return { typeWebhook: 'incomingBlock', ...stamp(o), chatId, chatState: 'blocked' };
}

/** The chat quota refused a send: the documented body, `quotaData` as the 466's `correspondentsStatus`. */
export function quotaBody(quotaData: QuotaExceededData, o: Origin): QuotaExceeded {
  return { typeWebhook: 'quotaExceeded', ...stamp(o), quotaData };
}

export function stateBody(stateInstance: InstanceState, o: Origin): StateInstanceChanged {
  return { typeWebhook: 'stateInstanceChanged', ...stamp(o), stateInstance };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
/** The fields of `o` that are defined, under the names given. */
const picked = (o: unknown, names: Record<string, string>): Obj =>
  isObj(o) ? Object.fromEntries(Object.entries(names).flatMap(([to, from]) => (o[from] === undefined ? [] : [[to, o[from]]]))) : {};

/** Each kind's data member → its message-input fields (the inverse of {@link DATA_OF}). */
const CONTENT_OF: Partial<Record<string, (md: Obj, ext: Obj) => Obj>> = {
  textMessage: (md) => picked(md.textMessageData, { textMessage: 'textMessage' }),
  extendedTextMessage: (_md, ext) => {
    const preview = picked(ext, { title: 'title', description: 'description', previewType: 'previewType', jpegThumbnail: 'jpegThumbnail' });
    return { ...picked(ext, { textMessage: 'text' }), ...(Object.keys(preview).length > 0 ? { preview } : {}) };
  },
  quotedMessage: (_md, ext) => picked(ext, { textMessage: 'text' }),
  reactionMessage: (_md, ext) => picked(ext, { reaction: 'text' }),
  locationMessage: (md) => ({
    location: picked(md.locationMessageData, {
      latitude: 'latitude',
      longitude: 'longitude',
      nameLocation: 'nameLocation',
      address: 'address',
      jpegThumbnail: 'jpegThumbnail',
    }),
  }),
  contactMessage: (md) => ({ contact: picked(md.contactMessageData, { displayName: 'displayName', vcard: 'vcard' }) }),
  contactsArrayMessage: (md) => picked(md.messageData, { contacts: 'contacts' }),
  pollMessage: (md) => {
    const p = isObj(md.pollMessageData) ? md.pollMessageData : {};
    return { pollMessageData: picked(p, { name: 'name', options: 'options', multipleAnswers: 'multipleAnswers' }) };
  },
  pollUpdateMessage: (md) => {
    const p = isObj(md.pollMessageData) ? md.pollMessageData : {};
    return { pollMessageData: picked(p, { stanzaId: 'stanzaId', name: 'name', votes: 'votes', multipleAnswers: 'multipleAnswers' }) };
  },
};

/** Kinds whose data member is the input's field of the same name. */
const SAME_KEY = [
  'interactiveButtons',
  'interactiveButtonsReply',
  'buttonsResponseMessage',
  'listResponseMessage',
  'templateButtonReplyMessage',
  'buttonsMessage',
  'listMessage',
  'templateMessage',
];

/** A data member as given, without the forwarding fields the service repeats in it. */
function withoutForwarding(v: unknown): unknown {
  if (!isObj(v)) return v;
  const { forwardingScore: _s, isForwarded: _f, ...rest } = v;
  return rest;
}

/** messageData → the message-input fields of its kind (the inverse of {@link messageDataOf}). */
function contentOf(md: Obj): Obj {
  const type = md.typeMessage;
  const ext = isObj(md.extendedTextMessageData) ? md.extendedTextMessageData : {};
  const out: Obj = { typeMessage: type };
  const of = typeof type === 'string' ? CONTENT_OF[type] : undefined;
  if (of) Object.assign(out, of(md, ext));
  else if (isObj(md.fileMessageData)) {
    const names = {
      downloadUrl: 'downloadUrl',
      caption: 'caption',
      fileName: 'fileName',
      jpegThumbnail: 'jpegThumbnail',
      mimeType: 'mimeType',
    };
    Object.assign(out, picked(md.fileMessageData, { ...names, isAnimated: 'isAnimated' }));
  } else if (typeof type === 'string' && SAME_KEY.includes(type)) out[type] = withoutForwarding(md[type]);
  else if (type === 'groupInviteMessage') out.groupInviteMessageData = md.groupInviteMessageData;
  const quotedId = isObj(md.quotedMessage) ? md.quotedMessage : type === 'quotedMessage' ? ext : undefined;
  if (quotedId) out.quotedMessage = picked(quotedId, { stanzaId: 'stanzaId', participant: 'participant' });
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
