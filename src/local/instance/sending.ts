/**
 * The sending methods beyond sendMessage and sendFileByUrl: sendFileByUpload
 * and uploadFile (files kept by the media store and served back at
 * `/files/<id>/<name>`), sendLocation, sendContact, sendPoll, the
 * interactive buttons, forwardMessages and sendTyping. Each request becomes
 * one entry of the instance's paced send queue (through the instance's one
 * enqueue path); at release the entry becomes the message of its kind in the
 * history, as the service's journals show it. sendTyping's entry holds the
 * queue for its typingTime and leaves no message.
 */
import { MsgflowError } from '../../api/errors.js';
import { chatKind } from '../../api/chat-id.js';
import type { Message, ParsedRequest, QueuedMessage, QuotedMessage, TypeMessage } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import { newMessageId } from '../ids.js';
import type { FetchedFile, MediaStore } from '../media/types.js';
import { quotedFrom } from '../message-kinds.js';
import type { History } from './history.js';
import type { QueueEntry } from './send-queue.js';

/** How long an uploaded file is kept: the link "is valid for 15 days". */
export const UPLOAD_RETENTION_MS = 15 * 24 * 3600_000;

/** sendTyping without typingTime: "the notification will last for 1 second". */
export const DEFAULT_TYPING_MS = 1000;

export interface SendingDeps {
  history: History;
  media: MediaStore;
  clock: Clock;
  /** Base URL of the links to stored files. */
  publicUrl: () => string;
  /** The account's own chat id (the author of a quoted outgoing message). */
  wid: string;
  /** The largest file accepted with a request, bytes (local.maxFileBytes). */
  maxFileBytes: number;
  /** The instance's one way into the send queue. */
  enqueue: (entry: QueueEntry) => Promise<void>;
  /** Aborted when the instance closes: a typing pause in progress ends (the entry stays queued). */
  stopping: AbortSignal;
}

/** The link the local service serves a stored file at. */
export function fileUrl(publicUrl: string, f: Pick<FetchedFile, 'id' | 'fileName'>): string {
  return `${publicUrl}/files/${f.id}/${encodeURIComponent(f.fileName)}`;
}

/** Waits `ms` on the service clock (typingTime), ending early when the instance closes. */
export async function pause(clock: Clock, ms: number | undefined, signal: AbortSignal): Promise<void> {
  if (ms !== undefined && ms > 0) await clock.sleep(ms, signal);
}

export class Sending {
  constructor(private readonly deps: SendingDeps) {}

  /** uploadFile: the file stored for 15 days, its link answered. */
  async uploadFile(r: ParsedRequest<'uploadFile'>): Promise<{ urlFile: string }> {
    const f = await this.store(r.file, r.fileName, r.mimeType);
    return { urlFile: fileUrl(this.deps.publicUrl(), f) };
  }

  /** sendFileByUpload: stored like uploadFile, then queued like sendFileByUrl (its link in the queue's body). */
  async sendFileByUpload(r: ParsedRequest<'sendFileByUpload'>): Promise<{ idMessage: string; urlFile: string }> {
    const f = await this.store(r.file, r.fileName);
    const urlFile = fileUrl(this.deps.publicUrl(), f);
    const entry: QueueEntry = {
      idMessage: newMessageId(),
      chatId: r.chatId,
      urlFile,
      fileName: f.fileName,
      fileId: f.id,
      typeMessage: f.typeMessage,
      enqueuedAt: this.deps.clock.now(),
    };
    if (r.caption !== undefined) entry.caption = r.caption;
    if (r.quotedMessageId !== undefined) entry.quotedMessageId = r.quotedMessageId;
    await this.deps.enqueue(entry);
    return { idMessage: entry.idMessage, urlFile };
  }

  sendLocation(r: ParsedRequest<'sendLocation'>): Promise<{ idMessage: string }> {
    const { chatId: _c, quotedMessageId: _q, ...payload } = r;
    return this.queue('location', r, payload);
  }

  sendContact(r: ParsedRequest<'sendContact'>): Promise<{ idMessage: string }> {
    return this.queue('contact', r, { contact: r.contact });
  }

  sendPoll(r: ParsedRequest<'sendPoll'>): Promise<{ idMessage: string }> {
    return this.queue('poll', r, { message: r.message, options: r.options, multipleAnswers: r.multipleAnswers });
  }

  sendInteractiveButtons(r: ParsedRequest<'sendInteractiveButtons'>): Promise<{ idMessage: string }> {
    return this.queue('buttons', r, buttonsPayload(r));
  }

  sendInteractiveButtonsReply(r: ParsedRequest<'sendInteractiveButtonsReply'>): Promise<{ idMessage: string }> {
    return this.queue('buttonsReply', r, buttonsPayload(r));
  }

  /**
   * forwardMessages: one queue entry for all of them (the service's queue
   * lists them as one ForwardMessages with their new ids).
   * @throws MsgflowError MESSAGE_NOT_FOUND naming the first id not in chatIdFrom
   */
  async forwardMessages(r: ParsedRequest<'forwardMessages'>): Promise<{ messages: string[] }> {
    for (const id of r.messages) {
      if (this.deps.history.find(id)?.message.chatId !== r.chatIdFrom) throw new MsgflowError('MESSAGE_NOT_FOUND', { idMessage: id });
    }
    const messageIds = r.messages.map(() => newMessageId());
    await this.deps.enqueue({
      idMessage: messageIds[0]!,
      chatId: r.chatId,
      kind: 'forward',
      messageIds,
      payload: { chatIdFrom: r.chatIdFrom, messages: r.messages },
      enqueuedAt: this.deps.clock.now(),
    });
    return { messages: messageIds };
  }

  /** sendTyping: a notice that takes its place in the queue and holds it for typingTime. The answer is empty. */
  async sendTyping(r: ParsedRequest<'sendTyping'>): Promise<undefined> {
    const payload: Record<string, unknown> = { typingTime: r.typingTime ?? DEFAULT_TYPING_MS };
    if (r.typingType !== undefined) payload.typingType = r.typingType;
    await this.deps.enqueue({ idMessage: newMessageId(), chatId: r.chatId, kind: 'typing', payload, enqueuedAt: this.deps.clock.now() });
    return undefined;
  }

  /** Called by the queue at release time for the kinds of this module: the message(s) into the history (durably). */
  async release(entry: QueueEntry, releasedAt: number): Promise<void> {
    if (entry.kind === 'typing') {
      await pause(this.deps.clock, entry.payload?.typingTime as number | undefined, this.deps.stopping);
      return;
    }
    const sentAtMs = Math.max(releasedAt, this.deps.clock.now());
    const messages = entry.kind === 'forward' ? this.forwarded(entry, sentAtMs) : [this.messageOf(entry, sentAtMs)];
    // One append: the forwarded messages are in the history all together or not at all.
    await this.deps.history.append(...messages.map((message) => ({ message, sentAtMs })));
  }

  /**
   * The message an entry of this module becomes, as journals show it (also
   * while it waits: `pending`). A forward shows its first message.
   */
  messageOf(entry: QueueEntry, sentAtMs: number): Message {
    if (entry.kind === 'forward') return this.forwarded(entry, sentAtMs)[0]!;
    const m: Message = { ...outgoingBase(entry, sentAtMs), typeMessage: TYPE_OF[entry.kind!] ?? 'textMessage', ...contentOf(entry) };
    const quoted = this.quoted(entry.quotedMessageId, entry.chatId);
    if (quoted) m.quotedMessage = quoted;
    return m;
  }

  /** The messages an entry of this module will be, as getMessage and lastOutgoingMessages show them while it waits: `pending`. */
  pendingMessages(entry: QueueEntry): Message[] {
    if (entry.kind === 'typing') return [];
    const list = entry.kind === 'forward' ? this.forwarded(entry, entry.enqueuedAt) : [this.messageOf(entry, entry.enqueuedAt)];
    return list.map((m) => ({ ...m, statusMessage: 'pending' }));
  }

  /** What a message quoting `idMessage` in `chatId` shows of it; undefined when the system does not know it in that chat. */
  quoted(idMessage: string | undefined, chatId: string): QuotedMessage | undefined {
    const q = idMessage === undefined ? undefined : this.deps.history.find(idMessage);
    return q && q.message.chatId === chatId ? quotedFrom(q.message, this.deps.wid) : undefined;
  }

  /** Every message a forward entry sends: copies of the originals, with new ids, marked forwarded. */
  private forwarded(entry: QueueEntry, sentAtMs: number): Message[] {
    const sources = (entry.payload?.messages as string[] | undefined) ?? [];
    return sources.flatMap((id, i) => {
      const src = this.deps.history.find(id)?.message;
      if (!src) return [];
      return [forwardCopy(src, { ...outgoingBase(entry, sentAtMs), idMessage: entry.messageIds?.[i] ?? newMessageId() })];
    });
  }

  private async store(data: Uint8Array, fileName?: string, mimeType?: string): Promise<FetchedFile> {
    // The HTTP body cap allows the multipart envelope; the file itself has the documented limit.
    if (data.byteLength > this.deps.maxFileBytes) throw new MsgflowError('PAYLOAD_TOO_LARGE', { limit: this.deps.maxFileBytes });
    return this.deps.media.storeUpload({
      data,
      ...(fileName === undefined ? {} : { fileName }),
      ...(mimeType === undefined ? {} : { mimeType }),
      retentionMs: UPLOAD_RETENTION_MS,
    });
  }

  private async queue(
    kind: NonNullable<QueueEntry['kind']>,
    r: { chatId: string; quotedMessageId?: string },
    payload: Record<string, unknown>,
  ): Promise<{ idMessage: string }> {
    const entry: QueueEntry = { idMessage: newMessageId(), chatId: r.chatId, kind, payload, enqueuedAt: this.deps.clock.now() };
    if (r.quotedMessageId !== undefined) entry.quotedMessageId = r.quotedMessageId;
    await this.deps.enqueue(entry);
    return { idMessage: entry.idMessage };
  }
}

/** The kinds of this module and the typeMessage each becomes. */
const TYPE_OF: Partial<Record<NonNullable<QueueEntry['kind']>, TypeMessage>> = {
  location: 'locationMessage',
  contact: 'contactMessage',
  poll: 'pollMessage',
  buttons: 'interactiveButtons',
  buttonsReply: 'interactiveButtonsReply',
};

/** The method (showMessagesQueue's `type`) that queued an entry of each kind. */
const QUEUE_TYPE_OF: Partial<Record<NonNullable<QueueEntry['kind']>, QueuedMessage['type']>> = {
  location: 'sendLocation',
  contact: 'sendContact',
  poll: 'sendPoll',
  buttons: 'sendInteractiveButtons',
  buttonsReply: 'sendInteractiveButtonsReply',
  forward: 'ForwardMessages',
};

/** Whether an entry is one of this module's kinds (not sendMessage, not a file). */
export function isSendingKind(e: QueueEntry): boolean {
  return e.kind !== undefined && e.kind !== 'text';
}

/** showMessagesQueue's view of an entry of this module; undefined for a typing notice (not a message). */
export function showQueuedKind(e: QueueEntry): QueuedMessage | undefined {
  const type = e.kind ? QUEUE_TYPE_OF[e.kind] : undefined;
  if (!type) return undefined;
  const body: QueuedMessage['body'] = { chatId: e.chatId, ...structuredClone(e.payload ?? {}) };
  if (e.quotedMessageId !== undefined) body.quotedMessageId = e.quotedMessageId;
  const shown: QueuedMessage = { messageID: e.idMessage, type, body, statusMessage: 'pending' };
  if (e.messageIds) shown.messagesIDs = [...e.messageIds];
  return shown;
}

function buttonsPayload(r: { header?: string; body: string; footer?: string; buttons: unknown[] }): Record<string, unknown> {
  return { header: r.header ?? '', body: r.body, footer: r.footer ?? '', buttons: r.buttons };
}

/** The fields every message sent through the API has. */
export function outgoingBase(entry: Pick<QueueEntry, 'idMessage' | 'chatId'>, sentAtMs: number): Omit<Message, 'typeMessage'> {
  return {
    type: 'outgoing',
    idMessage: entry.idMessage,
    timestamp: Math.floor(sentAtMs / 1000),
    chatId: entry.chatId,
    chatType: chatKind(entry.chatId) === 'group' ? 'group' : 'user',
    sendByApi: true,
    isForwarded: false,
    forwardingScore: 0,
    deletedMessageId: '',
    editedMessageId: '',
    isEdited: false,
    isDeleted: false,
  };
}

/** The content fields of an entry's message, by kind. */
function contentOf(entry: QueueEntry): Partial<Message> {
  const p = entry.payload ?? {};
  switch (entry.kind) {
    case 'location':
      return {
        location: {
          nameLocation: (p.nameLocation as string | undefined) ?? '',
          address: (p.address as string | undefined) ?? '',
          latitude: p.latitude as number,
          longitude: p.longitude as number,
          jpegThumbnail: '',
          forwardingScore: 0,
          isForwarded: false,
        },
      };
    case 'contact':
      return { contact: contactCard(p.contact as ParsedRequest<'sendContact'>['contact']) };
    case 'poll':
      return {
        pollMessageData: {
          name: p.message as string,
          options: structuredClone(p.options as { optionName: string }[]),
          multipleAnswers: p.multipleAnswers as boolean,
        },
      };
    case 'buttons':
      return { interactiveButtons: structuredClone(p) as unknown as Message['interactiveButtons'] };
    case 'buttonsReply':
      return { interactiveButtonsReply: structuredClone(p) as unknown as Message['interactiveButtonsReply'] };
    default:
      return {};
  }
}

/** sendContact's card as the journal's `contact`: a display name and a vCard 3.0 built from the fields given. */
export function contactCard(c: ParsedRequest<'sendContact'>['contact']): NonNullable<Message['contact']> {
  const person = [c.firstName, c.middleName, c.lastName].filter((v): v is string => v !== undefined && v !== '');
  const displayName = person.length > 0 ? person.join(' ') : (c.company ?? '');
  const lines = [
    'BEGIN:VCARD',
    'VERSION:3.0',
    `N:${c.lastName ?? ''};${c.firstName ?? ''};${c.middleName ?? ''};;`,
    `FN:${displayName}`,
    ...(c.company ? [`ORG:${c.company}`] : []),
    `TEL;type=CELL;type=VOICE;waid=${c.phoneContact}:+${c.phoneContact}`,
    'END:VCARD',
  ];
  return {
    chatId: `${c.phoneContact}@c.us`,
    displayName,
    vcard: lines.join('\n'),
    forwardingScore: 0,
    isForwarded: false,
    urlAvatar: '',
    phoneNumber: c.phoneContact,
  };
}

/** Fields of a message that belong to how it was received or sent, not to its content: a forward gets its own. */
const NOT_CONTENT = new Set<string>([
  'type',
  'idMessage',
  'timestamp',
  'chatId',
  'chatType',
  'statusMessage',
  'sendByApi',
  'senderId',
  'senderName',
  'senderType',
  'senderContactName',
  'isForwarded',
  'forwardingScore',
  'deletedMessageId',
  'editedMessageId',
  'isEdited',
  'isDeleted',
  'quotedMessage',
]);

/** A forwarded copy of `src`: its content, with `base`'s identity, marked forwarded once more. */
function forwardCopy(src: Message, base: Omit<Message, 'typeMessage'>): Message {
  const content = Object.fromEntries(Object.entries(structuredClone(src)).filter(([k]) => !NOT_CONTENT.has(k)));
  const forwardingScore = (src.forwardingScore ?? 0) + 1;
  const m = { ...base, ...content, typeMessage: src.typeMessage, isForwarded: true, forwardingScore } as Message;
  // A quote is not forwarded: what was a quoting text is a plain text in the other chat.
  if (m.typeMessage === 'quotedMessage') m.typeMessage = 'textMessage';
  if (m.location) m.location = { ...m.location, forwardingScore, isForwarded: true };
  if (m.contact) m.contact = { ...m.contact, forwardingScore, isForwarded: true };
  return m;
}
