/**
 * What a dialog reads of an incoming message: its text, its kind (a family
 * of the service's typeMessage), the button, list row or poll options it
 * answers with. Read from the run's `event` (the notification as received)
 * through the notification body parser, so a dialog and a trigger see the
 * same text.
 */
import { parseNotification, textOf, typeMessageOf, chatIdOf } from '../notify/body.js';
import type { MessageKind } from './schema.js';

export interface DialogMessage {
  /** The message id (`idMessage`): a session applies each message once. */
  id: string;
  chatId: string;
  /** The text, caption, pressed button's or chosen row's label; undefined for a location, a contact, a vote. */
  text?: string;
  kind: MessageKind | 'other';
  typeMessage?: string;
  /** Ids and labels of the pressed button, the chosen row or the voted poll options. */
  choices: string[];
  /** The sender's display name, when the service sent one. */
  senderName?: string;
}

const KIND_OF: Record<string, MessageKind> = {
  textMessage: 'text',
  extendedTextMessage: 'text',
  quotedMessage: 'text',
  locationMessage: 'location',
  contactMessage: 'contact',
  contactsArrayMessage: 'contact',
  imageMessage: 'image',
  videoMessage: 'video',
  documentMessage: 'document',
  audioMessage: 'audio',
  stickerMessage: 'sticker',
  pollUpdateMessage: 'poll',
  buttonsResponseMessage: 'text',
  templateButtonReplyMessage: 'text',
  listResponseMessage: 'text',
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string[] => (typeof v === 'string' && v !== '' ? [v] : []);

/** The button id/label, list row or poll options the message chooses. */
function choicesOf(md: Obj, chatId: string): string[] {
  const b = md.buttonsResponseMessage;
  if (isObj(b)) return [...str(b.selectedButtonId), ...str(b.selectedButtonText)];
  const t = md.templateButtonReplyMessage;
  if (isObj(t)) return [...str(t.selectedId), ...str(t.selectedDisplayText)];
  const l = md.listResponseMessage;
  if (isObj(l)) return [...str(l.singleSelectReply), ...str(l.title)];
  const poll = md.pollMessageData;
  if (md.typeMessage === 'pollUpdateMessage' && isObj(poll) && Array.isArray(poll.votes)) {
    return poll.votes.flatMap((v) =>
      isObj(v) && Array.isArray(v.optionVoters) && v.optionVoters.includes(chatId) ? str(v.optionName) : [],
    );
  }
  return [];
}

/** The message of a run's event, or undefined when the event is not an incoming message with an id and a chat. */
export function dialogMessageOf(event: unknown): DialogMessage | undefined {
  const n = parseNotification(event);
  const chatId = n && chatIdOf(n);
  if (!n || n.typeWebhook !== 'incomingMessageReceived' || !n.idMessage || !chatId) return undefined;
  const typeMessage = typeMessageOf(n);
  const md = isObj(n.raw.messageData) ? n.raw.messageData : {};
  const sender = isObj(n.raw.senderData) ? n.raw.senderData : {};
  const text = textOf(n);
  return {
    id: n.idMessage,
    chatId,
    ...(text === undefined ? {} : { text }),
    kind: (typeMessage === undefined ? undefined : KIND_OF[typeMessage]) ?? 'other',
    ...(typeMessage === undefined ? {} : { typeMessage }),
    choices: choicesOf(md, chatId),
    ...(typeof sender.senderName === 'string' && sender.senderName !== '' ? { senderName: sender.senderName } : {}),
  };
}
