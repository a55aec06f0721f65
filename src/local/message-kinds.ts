/**
 * The message kinds the service documents beyond the spec's list (quotes,
 * contact arrays, poll updates, buttons and their replies): their fields in
 * a stored Message, and what a quote shows of the message it quotes.
 */
import type { Message, QuotedMessage } from '../api/types.js';
import type { ParsedMessageInput } from './message-input.js';

/** The fields of a message that hold its content (what a quote of it repeats). */
const CONTENT_FIELDS = [
  'textMessage',
  'downloadUrl',
  'caption',
  'fileName',
  'jpegThumbnail',
  'mimeType',
  'isAnimated',
  'location',
  'contact',
  'contacts',
  'pollMessageData',
  'extendedTextMessage',
  'interactiveButtons',
  'interactiveButtonsReply',
  'buttonsMessage',
  'listMessage',
  'templateMessage',
] as const satisfies readonly (keyof Message)[];

/**
 * What a message quoting `q` shows of it: its id, its author (`ownWid` for
 * one of ours), its kind and its content fields, as the service's quotedMessage.
 */
export function quotedFrom(q: Message, ownWid: string): QuotedMessage {
  const out: QuotedMessage = {
    stanzaId: q.idMessage,
    participant: q.type === 'outgoing' ? ownWid : (q.senderId ?? q.chatId),
    typeMessage: q.typeMessage,
  };
  for (const f of CONTENT_FIELDS) if (q[f] !== undefined) out[f] = structuredClone(q[f]);
  return out;
}

type Kind<T extends ParsedMessageInput['typeMessage']> = Extract<ParsedMessageInput, { typeMessage: T }>;

/** The fields of a kind the spec does not list; false for a kind of the spec's list (message-input.ts fills those). */
export function fillDocumentedKind(m: Message, input: ParsedMessageInput): boolean {
  switch (input.typeMessage) {
    case 'quotedMessage':
      m.textMessage = input.textMessage;
      return true;
    case 'contactsArrayMessage':
      m.contacts = input.contacts.map((c) => ({ ...c }));
      return true;
    case 'pollUpdateMessage':
      // The instance turned a `vote` into the update's data before it got here.
      if (input.pollMessageData) m.pollMessageData = structuredClone(input.pollMessageData);
      return true;
    case 'buttonsResponseMessage':
      m.buttonsResponseMessage = {
        ...input.buttonsResponseMessage,
        selectedButtonText: input.buttonsResponseMessage.selectedButtonText ?? '',
      };
      return true;
    default:
      return fillVerbatimKind(m, input);
  }
}

/** Kinds kept as given, under the data key the service names after them. */
function fillVerbatimKind(m: Message, input: ParsedMessageInput): boolean {
  switch (input.typeMessage) {
    case 'listResponseMessage':
      m.listResponseMessage = { ...input.listResponseMessage };
      return true;
    case 'templateButtonReplyMessage':
      m.templateButtonReplyMessage = { ...input.templateButtonReplyMessage };
      return true;
    case 'buttonsMessage':
      m.buttonsMessage = structuredClone((input as Kind<'buttonsMessage'>).buttonsMessage);
      return true;
    case 'listMessage':
      m.listMessage = structuredClone(input.listMessage);
      return true;
    case 'templateMessage':
      m.templateMessage = structuredClone(input.templateMessage);
      return true;
    case 'groupInviteMessage':
      m.groupInviteMessageData = structuredClone(input.groupInviteMessageData);
      return true;
    case 'interactiveButtons':
      m.interactiveButtons = structuredClone(input.interactiveButtons);
      return true;
    case 'interactiveButtonsReply':
      m.interactiveButtonsReply = structuredClone(input.interactiveButtonsReply);
      return true;
    default:
      return false;
  }
}
