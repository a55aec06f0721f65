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

/**
 * Kinds kept as given (a copy), under the data key the service names after
 * them: the same key in the request and in the stored message.
 */
const VERBATIM_KEYS = {
  listResponseMessage: 'listResponseMessage',
  templateButtonReplyMessage: 'templateButtonReplyMessage',
  buttonsMessage: 'buttonsMessage',
  listMessage: 'listMessage',
  templateMessage: 'templateMessage',
  groupInviteMessage: 'groupInviteMessageData',
  interactiveButtons: 'interactiveButtons',
  interactiveButtonsReply: 'interactiveButtonsReply',
} as const satisfies Partial<Record<ParsedMessageInput['typeMessage'], keyof Message>>;

type VerbatimKey = (typeof VERBATIM_KEYS)[keyof typeof VERBATIM_KEYS];

function fillVerbatimKind(m: Message, input: ParsedMessageInput): boolean {
  if (!Object.hasOwn(VERBATIM_KEYS, input.typeMessage)) return false;
  const key = VERBATIM_KEYS[input.typeMessage as keyof typeof VERBATIM_KEYS];
  Object.assign(m, { [key]: structuredClone((input as Partial<Record<VerbatimKey, unknown>>)[key]) });
  return true;
}
