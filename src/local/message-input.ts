/**
 * Messages declared by hand: in a seed file, or injected through the admin
 * endpoint. One zod schema per typeMessage, so a seed can hold every kind the
 * spec lists (plus sticker, reaction and contact from its examples), and each
 * becomes a Message with every field the spec lists for its kind.
 */
import { z } from 'zod';
import { isChatId, chatKind } from '../api/chat-id.js';
import type { ChatType, Message, TypeMessage } from '../api/types.js';
import type { StoredMessage } from './instance/history.js';
import { newMessageId } from './ids.js';
import { fillDocumentedKind, quotedFrom } from './message-kinds.js';

const chatTypes = ['user', 'group', 'supergroup', 'channel', 'bot'] as const;
const chatIdField = z.string().refine(isChatId, { error: 'expected a chat id such as 79001112233@c.us or 120363...@g.us' });

const common = {
  chatId: chatIdField,
  /** @default incoming */
  type: z.enum(['incoming', 'outgoing']).default('incoming'),
  /** At least 16 characters; @default a new random id */
  idMessage: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,64}$/, { error: 'expected 16-64 letters, digits, _ or -' })
    .optional(),
  /** UNIX seconds or an ISO date-time; @default now */
  timestamp: z.union([z.number().int().nonnegative(), z.iso.datetime({ offset: true })]).optional(),
  chatType: z.enum(chatTypes).optional(),
  /** Incoming: @default the chat id for personal chats */
  senderId: z.string().optional(),
  senderName: z.string().optional(),
  senderType: z.enum(chatTypes).optional(),
  /** Incoming; @default looked up in the phonebook when read */
  senderContactName: z.string().optional(),
  /**
   * Outgoing: fix the status instead of following network.deliveredAfterMs/readAfterMs; also the
   * journal statuses of a message that went nowhere (noAccount, notInGroup, yellowCard).
   */
  statusMessage: z.enum(['sent', 'delivered', 'read', 'noAccount', 'notInGroup', 'yellowCard']).optional(),
  /** Outgoing: @default false (sent from the phone) */
  sendByApi: z.boolean().optional(),
  isForwarded: z.boolean().default(false),
  forwardingScore: z.number().int().min(0).default(0),
  /**
   * The message this one quotes (same chat). Its kind and content are looked
   * up when the message arrives, as the service shows them; a text quoting
   * a message is a `quotedMessage`.
   */
  quotedMessage: z.strictObject({ stanzaId: z.string(), participant: z.string().default('') }).optional(),
};

/** A link preview of an extendedTextMessage. */
const preview = z.strictObject({
  title: z.string().default(''),
  description: z.string().default(''),
  /** @default NONE */
  previewType: z.string().default('NONE'),
  jpegThumbnail: z.string().default(''),
});

const buttonsFields = {
  header: z.string().default(''),
  body: z.string(),
  footer: z.string().default(''),
};

/** Every typeMessage a message may be declared with (the union below), for its error text. */
export const INPUT_TYPE_MESSAGES = [
  'textMessage',
  'extendedTextMessage',
  'quotedMessage',
  'imageMessage',
  'videoMessage',
  'documentMessage',
  'audioMessage',
  'stickerMessage',
  'pollMessage',
  'pollUpdateMessage',
  'locationMessage',
  'reactionMessage',
  'contactMessage',
  'contactsArrayMessage',
  'buttonsMessage',
  'listMessage',
  'templateMessage',
  'groupInviteMessage',
  'buttonsResponseMessage',
  'listResponseMessage',
  'templateButtonReplyMessage',
  'interactiveButtons',
  'interactiveButtonsReply',
] as const;

const fileFields = {
  downloadUrl: z.string().default(''),
  fileName: z.string().min(1),
  mimeType: z.string().default('application/octet-stream'),
  caption: z.string().default(''),
  jpegThumbnail: z.string().default(''),
  isAnimated: z.boolean().default(false),
};

export const MessageInputSchema = z.discriminatedUnion(
  'typeMessage',
  [
    z.strictObject({ ...common, typeMessage: z.literal('textMessage'), textMessage: z.string() }),
    /** A text with a link preview. */
    z.strictObject({ ...common, typeMessage: z.literal('extendedTextMessage'), textMessage: z.string(), preview: preview.optional() }),
    /** A text quoting a message (`quotedMessage` required). */
    z.strictObject({
      ...common,
      typeMessage: z.literal('quotedMessage'),
      textMessage: z.string(),
      quotedMessage: z.strictObject({ stanzaId: z.string(), participant: z.string().default('') }),
    }),
    z.strictObject({ ...common, typeMessage: z.literal('imageMessage'), ...fileFields }),
    z.strictObject({ ...common, typeMessage: z.literal('videoMessage'), ...fileFields, videoNote: z.boolean().default(false) }),
    z.strictObject({ ...common, typeMessage: z.literal('documentMessage'), ...fileFields }),
    z.strictObject({ ...common, typeMessage: z.literal('audioMessage'), ...fileFields }),
    z.strictObject({ ...common, typeMessage: z.literal('stickerMessage'), ...fileFields }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('pollMessage'),
      pollMessageData: z.strictObject({
        name: z.string(),
        options: z.array(z.union([z.string(), z.strictObject({ optionName: z.string() })])).min(1),
        multipleAnswers: z.boolean().default(false),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('locationMessage'),
      location: z.strictObject({
        latitude: z.number().min(-90).max(90),
        longitude: z.number().min(-180).max(180),
        nameLocation: z.string().optional(),
        address: z.string().optional(),
        jpegThumbnail: z.string().optional(),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('reactionMessage'),
      /** The reaction, e.g. an emoji. */
      reaction: z.string(),
      quotedMessage: z.strictObject({ stanzaId: z.string(), participant: z.string().default('') }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('contactMessage'),
      contact: z.strictObject({
        displayName: z.string(),
        vcard: z.string(),
        chatId: z.string().default(''),
        phoneNumber: z.number().int().positive().optional(),
        urlAvatar: z.string().optional(),
      }),
    }),
    // Sending: the kinds the service documents beyond the spec's list.
    z.strictObject({
      ...common,
      typeMessage: z.literal('contactsArrayMessage'),
      contacts: z.array(z.strictObject({ displayName: z.string(), vcard: z.string() })).min(1),
    }),
    /**
     * A vote on a poll of this chat: `vote` (the options now chosen by the
     * sender: the service works out every option's voters) or the update's
     * whole `pollMessageData`, as a notification carries it.
     */
    z
      .strictObject({
        ...common,
        typeMessage: z.literal('pollUpdateMessage'),
        vote: z.strictObject({ stanzaId: z.string().min(1), options: z.array(z.string()) }).optional(),
        pollMessageData: z
          .strictObject({
            stanzaId: z.string().min(1),
            name: z.string().default(''),
            votes: z.array(z.strictObject({ optionName: z.string(), optionVoters: z.array(z.string()).default([]) })),
            multipleAnswers: z.boolean().default(false),
          })
          .optional(),
      })
      .refine((v) => (v.vote === undefined) !== (v.pollMessageData === undefined), {
        error: "a pollUpdateMessage takes either 'vote' ({stanzaId, options}) or 'pollMessageData', not both",
      }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('buttonsMessage'),
      buttonsMessage: z.strictObject({
        contentText: z.string(),
        footer: z.string().default(''),
        buttons: z.array(z.strictObject({ buttonId: z.string(), buttonText: z.string() })).min(1),
      }),
    }),
    z.strictObject({ ...common, typeMessage: z.literal('listMessage'), listMessage: z.record(z.string(), z.unknown()) }),
    z.strictObject({ ...common, typeMessage: z.literal('templateMessage'), templateMessage: z.record(z.string(), z.unknown()) }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('groupInviteMessage'),
      groupInviteMessageData: z.record(z.string(), z.unknown()),
    }),
    /** A button of a buttons message of this chat pressed; selectedButtonText defaults to the button's text. */
    z.strictObject({
      ...common,
      typeMessage: z.literal('buttonsResponseMessage'),
      buttonsResponseMessage: z.strictObject({
        stanzaId: z.string().min(1),
        selectedButtonId: z.string().min(1),
        selectedButtonText: z.string().optional(),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('listResponseMessage'),
      listResponseMessage: z.strictObject({
        stanzaId: z.string().min(1),
        title: z.string(),
        listType: z.number().int().default(1),
        singleSelectReply: z.string(),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('templateButtonReplyMessage'),
      templateButtonReplyMessage: z.strictObject({
        stanzaId: z.string().min(1),
        selectedIndex: z.number().int().min(0),
        selectedId: z.string(),
        selectedDisplayText: z.string(),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('interactiveButtons'),
      interactiveButtons: z.strictObject({
        ...buttonsFields,
        buttons: z
          .array(
            z.strictObject({
              type: z.enum(['copy', 'call', 'url']),
              buttonId: z.string(),
              buttonText: z.string(),
              copyCode: z.string().optional(),
              phoneNumber: z.string().optional(),
              url: z.string().optional(),
            }),
          )
          .min(1),
      }),
    }),
    z.strictObject({
      ...common,
      typeMessage: z.literal('interactiveButtonsReply'),
      interactiveButtonsReply: z.strictObject({
        ...buttonsFields,
        buttons: z.array(z.strictObject({ buttonId: z.string(), buttonText: z.string() })).min(1),
      }),
    }),
  ],
  {
    error: (iss) => (iss.code === 'invalid_union' ? `'typeMessage' must be one of ${INPUT_TYPE_MESSAGES.join(', ')}` : undefined),
  },
);

export type MessageInput = z.input<typeof MessageInputSchema>;
export type ParsedMessageInput = z.output<typeof MessageInputSchema>;

export interface BuildContext {
  now: number;
  /** Name of the account behind a chat id, for senderName. */
  nameOf(chatId: string): string | undefined;
  /** A stored message, for what a quote shows of the message it quotes. @default none known */
  find?(idMessage: string): Message | undefined;
  /** The account's own chat id: the author of a quoted outgoing message. @default '' */
  ownWid?: string;
}

/** Turns a validated input into the stored form, filling every field the spec lists for its kind. */
export function buildStoredMessage(input: ParsedMessageInput, ctx: BuildContext): StoredMessage {
  const sentAtMs =
    input.timestamp === undefined ? ctx.now : typeof input.timestamp === 'number' ? input.timestamp * 1000 : Date.parse(input.timestamp);
  const group = chatKind(input.chatId) === 'group';
  const chatType: ChatType = input.chatType ?? (group ? 'group' : 'user');
  const m: Message = {
    type: input.type,
    idMessage: input.idMessage ?? newMessageId(),
    timestamp: Math.floor(sentAtMs / 1000),
    typeMessage: input.typeMessage as TypeMessage,
    chatId: input.chatId,
    chatType,
  };
  if (input.type === 'outgoing') {
    m.sendByApi = input.sendByApi ?? false;
  } else {
    m.senderId = input.senderId ?? (group ? '' : input.chatId);
    m.senderName = input.senderName ?? ctx.nameOf(m.senderId) ?? '';
    m.senderType = input.senderType ?? 'user';
    if (input.senderContactName !== undefined) m.senderContactName = input.senderContactName;
  }
  m.isForwarded = input.isForwarded;
  m.forwardingScore = input.forwardingScore;
  m.deletedMessageId = '';
  m.editedMessageId = '';
  m.isEdited = false;
  m.isDeleted = false;
  quote(m, input, ctx);
  if (!fillDocumentedKind(m, input)) fillContent(m, input);
  const stored: StoredMessage = { message: m, sentAtMs };
  if (input.type === 'outgoing' && input.statusMessage) stored.fixedStatus = input.statusMessage;
  return stored;
}

/**
 * The quote, as the service shows it: a known quoted message's kind and
 * content beside its id; a text that quotes is a `quotedMessage` (a
 * reaction keeps only the id and author).
 */
function quote(m: Message, input: ParsedMessageInput, ctx: BuildContext): void {
  if (!input.quotedMessage) return;
  const q = input.typeMessage === 'reactionMessage' ? undefined : ctx.find?.(input.quotedMessage.stanzaId);
  m.quotedMessage = q ? { ...quotedFrom(q, ctx.ownWid ?? ''), stanzaId: input.quotedMessage.stanzaId } : { ...input.quotedMessage };
  if (q && input.quotedMessage.participant !== '') m.quotedMessage.participant = input.quotedMessage.participant;
  if (input.typeMessage === 'textMessage' || input.typeMessage === 'extendedTextMessage') m.typeMessage = 'quotedMessage';
}

/** The fields of the message's kind. */
function fillContent(m: Message, input: ParsedMessageInput): void {
  switch (input.typeMessage) {
    case 'textMessage':
      m.textMessage = input.textMessage;
      break;
    case 'extendedTextMessage':
      m.textMessage = input.textMessage;
      m.extendedTextMessageData = { text: input.textMessage };
      if (input.preview) m.extendedTextMessage = { text: input.textMessage, ...input.preview };
      break;
    case 'imageMessage':
    case 'videoMessage':
    case 'documentMessage':
    case 'audioMessage':
    case 'stickerMessage':
      m.downloadUrl = input.downloadUrl;
      m.caption = input.caption;
      m.fileName = input.fileName;
      m.jpegThumbnail = input.jpegThumbnail;
      m.mimeType = input.mimeType;
      m.isAnimated = input.isAnimated;
      if (input.typeMessage === 'videoMessage') m.videoNote = input.videoNote;
      break;
    case 'pollMessage':
      m.pollMessageData = {
        name: input.pollMessageData.name,
        options: input.pollMessageData.options.map((o) => (typeof o === 'string' ? { optionName: o } : o)),
        multipleAnswers: input.pollMessageData.multipleAnswers,
      };
      break;
    case 'locationMessage':
      m.location = { ...input.location, forwardingScore: input.forwardingScore, isForwarded: input.isForwarded };
      break;
    case 'reactionMessage':
      m.extendedTextMessageData = { text: input.reaction };
      m.quotedMessage = { ...input.quotedMessage };
      break;
    case 'contactMessage': {
      const c = input.contact;
      m.contact = {
        chatId: c.chatId,
        displayName: c.displayName,
        vcard: c.vcard,
        forwardingScore: input.forwardingScore,
        isForwarded: input.isForwarded,
      };
      if (input.type === 'outgoing') {
        m.contact.urlAvatar = c.urlAvatar ?? '';
        if (c.phoneNumber !== undefined) m.contact.phoneNumber = c.phoneNumber;
      }
      break;
    }
  }
}
