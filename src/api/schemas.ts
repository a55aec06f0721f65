/**
 * The request schemas of the API methods: ONE definition, used by the client
 * (before a request leaves), by the local service (on every request it
 * receives) and by the built-in actions (as their input schemas). Each check
 * carries the spec's "Details" text where the spec gives one, and a text in
 * the same (Joi-like) style where it does not.
 */
import { z } from 'zod';
import {
  CHECK_WHATSAPP_MAX_DIGITS,
  CHECK_WHATSAPP_MIN_DIGITS,
  PHONE_MAX_DIGITS,
  USERNAME_RE,
  chatKind,
  isChatId,
  isPersonalChatId,
} from './chat-id.js';

export const TYPING_TYPES = [
  'text',
  'record_voice_note',
  'upload_voice_note',
  'record_video_note',
  'upload_video_note',
  'record_video',
  'upload_video',
  'upload_photo',
  'upload_document',
  'choose_sticker',
  'choose_location',
  'choose_contact',
] as const;

export type TypingType = (typeof TYPING_TYPES)[number];

export const CAPTION_MAX = 1024;
export const MESSAGE_MAX = 20000;
export const RECEIVE_TIMEOUT_MIN = 5;
export const RECEIVE_TIMEOUT_MAX = 60;
export const SEND_DELAY_MIN = 500;
/** The service accepts any larger delay, and then sends nothing ("more than 86400000 msec: the message will not be sent"). */
export const SEND_DELAY_MAX = 86_400_000;
export const ID_MESSAGE_MIN = 16;
export const TYPING_TIME_MIN = 1000;
export const TYPING_TIME_MAX = 20000;

const NUL = /\u0000/;

/** A required or optional string field with the service's wording. */
function str(name: string) {
  return z
    .string({ error: (iss) => (iss.input === undefined ? `'${name}' is required` : `'${name}' must be a string`) })
    .refine((s) => !NUL.test(s), { error: `'${name}' must not contain NUL characters` });
}

function nonEmpty(name: string) {
  return str(name).refine((s) => s.length > 0, { error: `'${name}' is not allowed to be empty` });
}

function chatId(name = 'chatId') {
  return nonEmpty(name).refine(isChatId, {
    error: `'${name}' must be a chat ID: digits followed by @c.us (personal), an id ending in @g.us (group), or a numeric id`,
  });
}

function personalChatId(name = 'chatId') {
  return nonEmpty(name).refine(isPersonalChatId, {
    error: `'${name}' must be a personal chat ID: the phone number in international digits followed by @c.us`,
  });
}

/**
 * A positive integer within the safe-integer range. The spec's text
 * "'count' must be a number" covers a wrong type and a value beyond
 * Number.MAX_SAFE_INTEGER; the other two rules use texts of the same style.
 */
function positiveInt(name: string) {
  return z
    .number({ error: `'${name}' must be a number` })
    .refine((n) => Math.abs(n) <= Number.MAX_SAFE_INTEGER, { error: `'${name}' must be a number`, abort: true })
    .refine((n) => Number.isInteger(n), { error: `'${name}' must be an integer`, abort: true })
    .refine((n) => n >= 1, { error: `'${name}' must be greater than or equal to 1` });
}

function bool(name: string) {
  return z.boolean({ error: `'${name}' must be a boolean` });
}

const contactShape = {
  chatId: personalChatId(),
  firstName: nonEmpty('firstName'),
  lastName: str('lastName').optional(),
  saveInAddressbook: bool('saveInAddressbook').default(true),
};

const PHONE_TEXT = "Wrong format. 'phoneNumber' must contain only digits";

/**
 * phoneNumber is an integer in the spec; a string of digits is accepted too
 * (it is how numbers arrive from CSV files) and becomes a number.
 */
const PHONE_MAX = 10 ** PHONE_MAX_DIGITS - 1;

const phoneDigits = z
  .union([z.number(), z.string()], { error: PHONE_TEXT })
  .refine((v) => (typeof v === 'number' ? Number.isInteger(v) && v > 0 : /^\d+$/.test(v)), { error: PHONE_TEXT, abort: true });

const phoneNumber = phoneDigits
  .refine((v) => Number(v) <= PHONE_MAX, { error: "'phoneNumber' must have at most 15 digits (international format)" })
  .transform((v) => Number(v));

/** checkWhatsapp documents its own range and text (GREEN-API: 400 for fewer than 11 or more than 16 digits). */
const checkWhatsappPhone = phoneDigits
  .refine(
    (v) => {
      const n = String(v).length;
      return n >= CHECK_WHATSAPP_MIN_DIGITS && n <= CHECK_WHATSAPP_MAX_DIGITS;
    },
    { error: `bad phone number, valid from ${CHECK_WHATSAPP_MIN_DIGITS} to ${CHECK_WHATSAPP_MAX_DIGITS} digits` },
  )
  .transform((v) => Number(v));

const username = str('username').refine((s) => USERNAME_RE.test(s), {
  error: "'username' must start with @ followed by letters, digits, '_' or '.'",
});

function url(name: string) {
  return str(name).refine(
    (s) => {
      if (!/^https?:\/\//i.test(s)) return false;
      try {
        const u = new URL(s);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
      } catch {
        return false;
      }
    },
    { error: 'url has incorrect format. It should start with http(s)://' },
  );
}

/** An integer from `min` to `max`, with the texts of the other numeric checks. */
function intBetween(name: string, min: number, max: number) {
  return z
    .number({ error: `'${name}' must be a number` })
    .refine((n) => Number.isInteger(n), { error: `'${name}' must be an integer`, abort: true })
    .refine((n) => n >= min, { error: `'${name}' must be greater than or equal to ${min}`, abort: true })
    .refine((n) => n <= max, { error: `'${name}' must be less than or equal to ${max}` });
}

function yesNo(name: string) {
  return z.enum(['yes', 'no'], { error: `'${name}' must be one of [yes, no]` });
}

/** A webhook address: empty (no webhook: notifications are received with receiveNotification) or an http(s) URL. */
const webhookUrl = z.union([z.literal(''), url('webhookUrl')], {
  error: "'webhookUrl' must be an empty string or a URL starting with http(s)://",
});

/** The yes/no switches of setSettings/getSettings: which notifications the instance produces. */
export const SETTINGS_SWITCHES = [
  'markIncomingMessagesReaded',
  'markIncomingMessagesReadedOnReply',
  'outgoingWebhook',
  'outgoingMessageWebhook',
  'outgoingAPIMessageWebhook',
  'incomingWebhook',
  'stateWebhook',
  // Sending: votes on polls (pollUpdateMessage) need it besides incomingWebhook.
  'pollMessageWebhook',
  'keepOnlineStatus',
  'incomingCallWebhook',
  'incomingBlockWebhook',
  'deviceWebhook',
  'editedMessageWebhook',
  'deletedMessageWebhook',
  // Documented as deprecated: accepted, stored and returned, acting on nothing.
  'statusInstanceWebhook',
  'enableMessagesHistory',
  'sharedSession',
] as const;

export type SettingsSwitch = (typeof SETTINGS_SWITCHES)[number];

const settingsShape = {
  webhookUrl: webhookUrl.optional(),
  webhookUrlToken: str('webhookUrlToken').optional(),
  delaySendMessagesMilliseconds: intBetween('delaySendMessagesMilliseconds', SEND_DELAY_MIN, SEND_DELAY_MAX).optional(),
  markIncomingMessagesReaded: yesNo('markIncomingMessagesReaded').optional(),
  markIncomingMessagesReadedOnReply: yesNo('markIncomingMessagesReadedOnReply').optional(),
  outgoingWebhook: yesNo('outgoingWebhook').optional(),
  outgoingMessageWebhook: yesNo('outgoingMessageWebhook').optional(),
  outgoingAPIMessageWebhook: yesNo('outgoingAPIMessageWebhook').optional(),
  incomingWebhook: yesNo('incomingWebhook').optional(),
  stateWebhook: yesNo('stateWebhook').optional(),
  pollMessageWebhook: yesNo('pollMessageWebhook').optional(),
  keepOnlineStatus: yesNo('keepOnlineStatus').optional(),
  incomingCallWebhook: yesNo('incomingCallWebhook').optional(),
  incomingBlockWebhook: yesNo('incomingBlockWebhook').optional(),
  deviceWebhook: yesNo('deviceWebhook').optional(),
  editedMessageWebhook: yesNo('editedMessageWebhook').optional(),
  deletedMessageWebhook: yesNo('deletedMessageWebhook').optional(),
  statusInstanceWebhook: yesNo('statusInstanceWebhook').optional(),
  enableMessagesHistory: yesNo('enableMessagesHistory').optional(),
  sharedSession: yesNo('sharedSession').optional(),
  /** Deprecated in the service's docs: any text, stored and returned. */
  countryInstance: str('countryInstance').optional(),
};

const SETTINGS_KEYS = Object.keys(settingsShape);
const SETTINGS_EMPTY_TEXT = `at least one parameter must be given: ${SETTINGS_KEYS.join(', ')}`;

/** setSettings: "selective specification of parameters is allowed; at least one parameter must be specified". */
function hasASetting(body: Record<string, unknown>): boolean {
  return SETTINGS_KEYS.some((k) => body[k] !== undefined);
}

const fileName = nonEmpty('fileName').refine((s) => !s.startsWith('\uFEFF'), {
  error: "'fileName' must be UTF-8 without BOM",
});

/** How long the recipient sees "typing..." before the message, ms (the spec's 1 to 20 seconds). */
const typingTime = z
  .number({ error: "'typingTime' must be a number" })
  .refine((n) => Number.isInteger(n), { error: "'typingTime' must be an integer", abort: true })
  .refine((n) => n >= TYPING_TIME_MIN, { error: `'typingTime' must be greater than or equal to ${TYPING_TIME_MIN}`, abort: true })
  .refine((n) => n <= TYPING_TIME_MAX, { error: `'typingTime' must be less than or equal to ${TYPING_TIME_MAX}` });

// Sending: the pieces of the sending methods' requests.

/** sendMessage's link preview sizes. */
export const PREVIEW_TYPES = ['large', 'small'] as const;
/** The longest title, description and link of a custom preview. */
export const PREVIEW_TEXT_MAX = 300;
export const POLL_MESSAGE_MAX = 255;
export const POLL_OPTION_MAX = 100;
export const POLL_OPTIONS_MIN = 2;
export const POLL_OPTIONS_MAX = 12;
/** sendFileByUpload's caption (the documented limit; sendFileByUrl's spec gives 1024). */
export const UPLOAD_CAPTION_MAX = 20000;
export const BUTTONS_MAX = 3;
export const BUTTON_TEXT_MAX = 25;
export const INTERACTIVE_BUTTON_TYPES = ['copy', 'call', 'url'] as const;
/** sendTyping's kinds: the documented `recording`, and the activity notices of sendFileByUrl's typingType. */
export const SEND_TYPING_TYPES = ['recording', ...TYPING_TYPES] as const;

function textUpTo(name: string, max: number) {
  return str(name).refine((s) => s.length <= max, { error: `'${name}' length must be less than or equal to ${max} characters long` });
}

function nonEmptyUpTo(name: string, max: number) {
  return nonEmpty(name).refine((s) => s.length <= max, { error: `'${name}' length must be less than or equal to ${max} characters long` });
}

/** A number from `min` to `max` (a coordinate). */
function numberBetween(name: string, min: number, max: number) {
  return z
    .number({ error: (iss) => (iss.input === undefined ? `'${name}' is required` : `'${name}' must be a number`) })
    .refine((n) => Number.isFinite(n) && n >= min && n <= max, { error: `'${name}' must be a number from ${min} to ${max}` });
}

/** An array of `min` to `max` items, with the service's Joi-style texts. */
function arrayOf<T extends z.ZodType>(name: string, item: T, min: number, max?: number) {
  const base = z
    .array(item, { error: (iss) => (iss.input === undefined ? `'${name}' is required` : `'${name}' must be an array`) })
    .refine((a) => a.length >= min, { error: `'${name}' must contain at least ${min} item${min === 1 ? '' : 's'}`, abort: true });
  return max === undefined
    ? base
    : base.refine((a) => a.length <= max, { error: `'${name}' must contain less than or equal to ${max} items` });
}

/** The bytes of a file: a Buffer or any Uint8Array. */
const fileBytes = z.instanceof(Uint8Array, {
  error: (iss) => (iss.input === undefined ? "'file' is required" : "'file' must be the file's bytes"),
});

/** An uploaded file: refused alike by every method that takes one when it has no bytes (the service's text). */
const nonEmptyFile = fileBytes.refine((b) => b.byteLength > 0, { error: 'File is empty', abort: true });

// Groups: the pieces of the group methods' requests.

/** The longest group name (createGroup's documented limit; updateGroupName takes the same). */
export const GROUP_NAME_MAX = 100;

/** A group chat id (`…@g.us`, or a negative numeric id). */
function groupId(name = 'groupId') {
  return chatId(name).refine((s) => chatKind(s) === 'group', { error: `'${name}' must be a group chat ID (ending in @g.us)` });
}

/** Whether the bytes are a JPEG image (its SOI marker and a segment marker). */
function isJpeg(b: Uint8Array): boolean {
  return b.byteLength > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
}

/** The request of the methods acting on one participant of a group. */
const participantShape = { groupId: groupId(), participantChatId: personalChatId('participantChatId') };

/** sendMessage's customPreview: the preview shown instead of the one the link would give. */
const customPreview = z.strictObject(
  {
    title: nonEmptyUpTo('customPreview.title', PREVIEW_TEXT_MAX),
    description: textUpTo('customPreview.description', PREVIEW_TEXT_MAX).optional(),
    link: textUpTo('customPreview.link', PREVIEW_TEXT_MAX).optional(),
    urlFile: url('customPreview.urlFile').optional(),
    jpegThumbnail: str('customPreview.jpegThumbnail').optional(),
  },
  { error: "'customPreview' must be an object" },
);

const pollOption = z.strictObject(
  { optionName: nonEmptyUpTo('optionName', POLL_OPTION_MAX) },
  { error: "'options' items must be objects {optionName}" },
);

/** Options "must be different from each other by at least one symbol". */
function uniqueOptions(options: readonly { optionName: string }[]): boolean {
  return new Set(options.map((o) => o.optionName)).size === options.length;
}

const contactCard = z
  .strictObject(
    {
      phoneContact: z
        .number({
          error: (iss) => (iss.input === undefined ? "'contact.phoneContact' is required" : "'contact.phoneContact' must be a number"),
        })
        .refine((n) => Number.isSafeInteger(n) && n > 0, { error: "'contact.phoneContact' must be a positive integer", abort: true })
        .refine((n) => String(n).length <= PHONE_MAX_DIGITS, {
          error: `'contact.phoneContact' must have at most ${PHONE_MAX_DIGITS} digits (international format)`,
        }),
      firstName: str('contact.firstName').optional(),
      middleName: str('contact.middleName').optional(),
      lastName: str('contact.lastName').optional(),
      company: str('contact.company').optional(),
    },
    { error: (iss) => (iss.input === undefined ? "'contact' is required" : "'contact' must be an object") },
  )
  // Each name is required only when none of the other three is given.
  .refine((c) => [c.firstName, c.middleName, c.lastName, c.company].some((v) => v !== undefined && v !== ''), {
    error: "'contact' must have at least one of firstName, middleName, lastName, company",
  });

const interactiveButton = z
  .strictObject({
    type: z.enum(INTERACTIVE_BUTTON_TYPES, { error: `'buttons[].type' must be one of [${INTERACTIVE_BUTTON_TYPES.join(', ')}]` }),
    buttonId: nonEmpty('buttons[].buttonId'),
    buttonText: nonEmptyUpTo('buttons[].buttonText', BUTTON_TEXT_MAX),
    copyCode: str('buttons[].copyCode').optional(),
    phoneNumber: str('buttons[].phoneNumber').optional(),
    url: url('buttons[].url').optional(),
  })
  .refine((b) => b.type !== 'copy' || b.copyCode !== undefined, { error: "'buttons[].copyCode' is required for a copy button" })
  .refine((b) => b.type !== 'call' || b.phoneNumber !== undefined, { error: "'buttons[].phoneNumber' is required for a call button" })
  .refine((b) => b.type !== 'url' || b.url !== undefined, { error: "'buttons[].url' is required for a url button" });

const replyButton = z.strictObject({
  buttonId: nonEmpty('buttons[].buttonId'),
  buttonText: nonEmptyUpTo('buttons[].buttonText', BUTTON_TEXT_MAX),
});

/** Buttons' ids tell the reply apart: no two the same. */
function uniqueButtonIds(buttons: readonly { buttonId: string }[]): boolean {
  return new Set(buttons.map((b) => b.buttonId)).size === buttons.length;
}

/** A status's text limit (the official client checks the same). */
export const STATUS_TEXT_MAX = 500;
/** The fonts a text status may use (the service's list). */
export const STATUS_FONTS = ['SERIF', 'SANS_SERIF', 'NORICAN_REGULAR', 'BRYNDAN_WRITE', 'OSWALD_HEAVY'] as const;
/** A status's background: a #RRGGBB colour. */
const backgroundColor = str('backgroundColor').refine((s) => /^#[0-9a-fA-F]{6}$/.test(s), {
  error: "'backgroundColor' must be a colour as #RRGGBB",
});
/** Who sees a status: personal chat ids; left out (or empty), every contact. */
const participants = z.array(personalChatId('participants[]'), { error: "'participants' must be an array" }).optional();

const buttonsMessage = {
  chatId: chatId(),
  header: str('header').optional(),
  body: nonEmptyUpTo('body', MESSAGE_MAX),
  footer: str('footer').optional(),
};

/** Shapes, so callers can build strict (flow `with`) or stripping (HTTP body) objects. */
/** setDisappearingChat's lifetimes, seconds: off, 24 hours, 7 days, 90 days. */
export const EPHEMERAL_EXPIRATIONS = [0, 86400, 604800, 7776000] as const;

/** A yes/no parameter that may come from a query string (GET): `true`/`false` as text too. */
function queryBool(name: string) {
  return z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), bool(name));
}

export const REQUEST_SHAPES = {
  addContact: contactShape,
  editContact: contactShape,
  deleteContact: { chatId: personalChatId() },
  getChatHistory: {
    chatId: chatId(),
    count: positiveInt('count').default(100),
  },
  getMessage: {
    chatId: chatId(),
    idMessage: nonEmpty('idMessage').refine((s) => s.length >= ID_MESSAGE_MIN, {
      error: "'message id' must be at least 16 symbols",
    }),
  },
  sendFileByUrl: {
    chatId: chatId(),
    urlFile: url('urlFile'),
    fileName,
    caption: str('caption')
      .refine((s) => s.length <= CAPTION_MAX, {
        error: `'caption' length must be less than or equal to ${CAPTION_MAX} characters long`,
      })
      .optional(),
    quotedMessageId: str('quotedMessageId').optional(),
    typingTime: typingTime.optional(),
    typingType: z.enum(TYPING_TYPES, { error: `'typingType' must be one of [${TYPING_TYPES.join(', ')}]` }).optional(),
  },
  lastOutgoingMessages: {
    minutes: positiveInt('minutes').default(1440),
  },
  checkAccount: {
    phoneNumber: phoneNumber.optional(),
    username: username.optional(),
    force: bool('force').default(false),
  },
  getStateInstance: {},
  sendMessage: {
    chatId: chatId(),
    message: nonEmpty('message').refine((s) => s.length <= MESSAGE_MAX, {
      error: `'message' length must be less than or equal to ${MESSAGE_MAX} characters long`,
    }),
    quotedMessageId: str('quotedMessageId').optional(),
    linkPreview: bool('linkPreview').optional(),
    typePreview: z.enum(PREVIEW_TYPES, { error: `'typePreview' must be one of [${PREVIEW_TYPES.join(', ')}]` }).optional(),
    customPreview: customPreview.optional(),
    typingTime: typingTime.optional(),
  },
  checkWhatsapp: {
    phoneNumber: checkWhatsappPhone,
  },
  getSettings: {},
  setSettings: settingsShape,
  showMessagesQueue: {},
  clearMessagesQueue: {},
  lastIncomingMessages: {
    minutes: positiveInt('minutes').default(1440),
  },
  receiveNotification: {
    receiveTimeout: intBetween('receiveTimeout', RECEIVE_TIMEOUT_MIN, RECEIVE_TIMEOUT_MAX).default(RECEIVE_TIMEOUT_MIN),
  },
  deleteNotification: {
    receiptId: positiveInt('receiptId'),
  },
  // Sending
  sendFileByUpload: {
    chatId: chatId(),
    file: nonEmptyFile,
    /** With its extension: the type is taken from it. @default the file part's own name */
    fileName: fileName.optional(),
    caption: textUpTo('caption', UPLOAD_CAPTION_MAX).optional(),
    quotedMessageId: str('quotedMessageId').optional(),
  },
  uploadFile: {
    file: nonEmptyFile,
    /** Sent as `GA-Filename`: the stored file's name, its extension giving the type. */
    fileName: fileName.optional(),
    /** Sent as Content-Type. @default from fileName, else application/octet-stream */
    mimeType: nonEmpty('mimeType').optional(),
  },
  sendLocation: {
    chatId: chatId(),
    nameLocation: str('nameLocation').optional(),
    address: str('address').optional(),
    latitude: numberBetween('latitude', -90, 90),
    longitude: numberBetween('longitude', -180, 180),
    quotedMessageId: str('quotedMessageId').optional(),
  },
  sendContact: {
    chatId: chatId(),
    contact: contactCard,
    quotedMessageId: str('quotedMessageId').optional(),
  },
  sendPoll: {
    chatId: chatId(),
    message: nonEmptyUpTo('message', POLL_MESSAGE_MAX),
    options: arrayOf('options', pollOption, POLL_OPTIONS_MIN, POLL_OPTIONS_MAX).refine(uniqueOptions, {
      error: "'options' must be unique: each optionName must differ from the others",
    }),
    multipleAnswers: bool('multipleAnswers').default(false),
    quotedMessageId: str('quotedMessageId').optional(),
  },
  sendInteractiveButtons: {
    ...buttonsMessage,
    buttons: arrayOf('buttons', interactiveButton, 1, BUTTONS_MAX).refine(uniqueButtonIds, {
      error: "'buttons[].buttonId' must be unique",
    }),
  },
  sendInteractiveButtonsReply: {
    ...buttonsMessage,
    buttons: arrayOf('buttons', replyButton, 1, BUTTONS_MAX).refine(uniqueButtonIds, { error: "'buttons[].buttonId' must be unique" }),
  },
  forwardMessages: {
    /** Where the messages go. */
    chatId: chatId(),
    /** The chat they are in. */
    chatIdFrom: chatId('chatIdFrom'),
    messages: arrayOf('messages', nonEmpty('messages[]'), 1),
  },
  sendTyping: {
    chatId: chatId(),
    /** @default 1000: the notice lasts a second */
    typingTime: typingTime.optional(),
    typingType: z.enum(SEND_TYPING_TYPES, { error: `'typingType' must be one of [${SEND_TYPING_TYPES.join(', ')}]` }).optional(),
  },
  // Messages and chats
  getContacts: {
    /** true: group chats only; false: people only. @default both */
    group: queryBool('group').optional(),
    /** The most recently active first, at most this many. @default all */
    count: positiveInt('count').optional(),
  },
  // "This method does not support group chats" (the service: getGroupData is theirs).
  getContactInfo: { chatId: personalChatId() },
  getAvatar: { chatId: chatId() },
  getChats: {
    /** The most recently active first, at most this many. @default all */
    count: positiveInt('count').optional(),
  },
  downloadFile: { chatId: chatId(), idMessage: nonEmpty('idMessage') },
  deleteMessage: {
    chatId: chatId(),
    idMessage: nonEmpty('idMessage'),
    /** true: deleted for this account only; false: for everyone. @default false */
    onlySenderDelete: bool('onlySenderDelete').default(false),
  },
  editMessage: { chatId: chatId(), idMessage: nonEmpty('idMessage'), message: nonEmptyUpTo('message', MESSAGE_MAX) },
  readChat: {
    chatId: chatId(),
    /** Marks the chat read up to this incoming message. @default every message of the chat */
    idMessage: nonEmpty('idMessage').optional(),
  },
  archiveChat: { chatId: chatId() },
  unarchiveChat: { chatId: chatId() },
  setDisappearingChat: {
    chatId: chatId(),
    ephemeralExpiration: z
      .number({ error: `'ephemeralExpiration' must be one of [${EPHEMERAL_EXPIRATIONS.join(', ')}]` })
      .refine((n) => (EPHEMERAL_EXPIRATIONS as readonly number[]).includes(n), {
        error: `'ephemeralExpiration' must be one of [${EPHEMERAL_EXPIRATIONS.join(', ')}]`,
      }),
  },
  // Groups
  createGroup: {
    groupName: nonEmptyUpTo('groupName', GROUP_NAME_MAX),
    /** The participants besides the account itself: personal chat ids. */
    chatIds: arrayOf('chatIds', personalChatId('chatIds[]'), 1),
  },
  getGroupData: { groupId: groupId() },
  updateGroupName: { groupId: groupId(), groupName: nonEmptyUpTo('groupName', GROUP_NAME_MAX) },
  updateGroupSettings: {
    groupId: groupId(),
    /** Whether members who are not admins may change the name, picture and settings. Left out: unchanged. */
    allowParticipantsEditGroupSettings: bool('allowParticipantsEditGroupSettings').optional(),
    /** Whether members who are not admins may send messages. Left out: unchanged. */
    allowParticipantsSendMessages: bool('allowParticipantsSendMessages').optional(),
  },
  addGroupParticipant: participantShape,
  removeGroupParticipant: participantShape,
  setGroupAdmin: participantShape,
  removeAdmin: participantShape,
  setGroupPicture: {
    groupId: groupId(),
    /** A JPEG image (the service's texts for an empty file and another format). */
    file: nonEmptyFile.refine(isJpeg, { error: 'Unsupported media type' }),
    fileName: fileName.optional(),
  },
  leaveGroup: { groupId: groupId() },
  // Account, queues and calls
  getStatusInstance: {},
  getStateInstanceHistory: {
    /** How many records, newest first. @default 100 */
    count: positiveInt('count').default(100),
  },
  reboot: {},
  logout: {},
  qr: {},
  getAuthorizationCode: {
    phoneNumber,
  },
  getWaSettings: {},
  getMessagesCount: {},
  getWebhooksCount: {},
  clearWebhooksQueue: {},
  lastIncomingCalls: {
    minutes: positiveInt('minutes').default(1440),
  },
  lastOutgoingCalls: {
    minutes: positiveInt('minutes').default(1440),
  },
  setProfilePicture: {
    /** The picture (the service documents *.jpg). */
    file: fileBytes,
    /** The file part's name. */
    fileName: fileName.optional(),
  },
  // Statuses
  sendTextStatus: {
    message: nonEmptyUpTo('message', STATUS_TEXT_MAX),
    /** White text on this colour. @default '#000000' */
    backgroundColor: backgroundColor.optional(),
    font: z.enum(STATUS_FONTS, { error: `'font' must be one of [${STATUS_FONTS.join(', ')}]` }).optional(),
    participants,
  },
  sendVoiceStatus: {
    urlFile: url('urlFile'),
    fileName,
    /** @default '#000000' */
    backgroundColor: backgroundColor.optional(),
    participants,
  },
  sendMediaStatus: {
    urlFile: url('urlFile'),
    fileName,
    caption: textUpTo('caption', CAPTION_MAX).optional(),
    participants,
  },
  deleteStatus: { idMessage: nonEmpty('idMessage') },
  getStatusStatistic: { idMessage: nonEmpty('idMessage') },
  getIncomingStatuses: { minutes: positiveInt('minutes').default(1440) },
  getOutgoingStatuses: { minutes: positiveInt('minutes').default(1440) },
} as const;

const BODY_NOT_OBJECT = 'request body must be a JSON object';

function withBodyShape<S extends z.ZodRawShape>(shape: S) {
  return z.object(shape, { error: BODY_NOT_OBJECT });
}

function strictBodyShape<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, { error: BODY_NOT_OBJECT });
}

/** The schemas the service applies: unknown fields are ignored, as HTTP APIs do. */
export const REQUEST_SCHEMAS = {
  addContact: withBodyShape(REQUEST_SHAPES.addContact),
  editContact: withBodyShape(REQUEST_SHAPES.editContact),
  deleteContact: withBodyShape(REQUEST_SHAPES.deleteContact),
  getChatHistory: withBodyShape(REQUEST_SHAPES.getChatHistory),
  getMessage: withBodyShape(REQUEST_SHAPES.getMessage),
  sendFileByUrl: withBodyShape(REQUEST_SHAPES.sendFileByUrl),
  lastOutgoingMessages: withBodyShape(REQUEST_SHAPES.lastOutgoingMessages),
  checkAccount: withBodyShape(REQUEST_SHAPES.checkAccount),
  getStateInstance: withBodyShape(REQUEST_SHAPES.getStateInstance),
  sendMessage: withBodyShape(REQUEST_SHAPES.sendMessage),
  checkWhatsapp: withBodyShape(REQUEST_SHAPES.checkWhatsapp),
  getSettings: withBodyShape(REQUEST_SHAPES.getSettings),
  setSettings: withBodyShape(REQUEST_SHAPES.setSettings).refine(hasASetting, { error: SETTINGS_EMPTY_TEXT }),
  showMessagesQueue: withBodyShape(REQUEST_SHAPES.showMessagesQueue),
  clearMessagesQueue: withBodyShape(REQUEST_SHAPES.clearMessagesQueue),
  lastIncomingMessages: withBodyShape(REQUEST_SHAPES.lastIncomingMessages),
  receiveNotification: withBodyShape(REQUEST_SHAPES.receiveNotification),
  deleteNotification: withBodyShape(REQUEST_SHAPES.deleteNotification),
  // Sending
  sendFileByUpload: withBodyShape(REQUEST_SHAPES.sendFileByUpload),
  uploadFile: withBodyShape(REQUEST_SHAPES.uploadFile),
  sendLocation: withBodyShape(REQUEST_SHAPES.sendLocation),
  sendContact: withBodyShape(REQUEST_SHAPES.sendContact),
  sendPoll: withBodyShape(REQUEST_SHAPES.sendPoll),
  sendInteractiveButtons: withBodyShape(REQUEST_SHAPES.sendInteractiveButtons),
  sendInteractiveButtonsReply: withBodyShape(REQUEST_SHAPES.sendInteractiveButtonsReply),
  forwardMessages: withBodyShape(REQUEST_SHAPES.forwardMessages),
  sendTyping: withBodyShape(REQUEST_SHAPES.sendTyping),
  // Messages and chats
  getContacts: withBodyShape(REQUEST_SHAPES.getContacts),
  getContactInfo: withBodyShape(REQUEST_SHAPES.getContactInfo),
  getAvatar: withBodyShape(REQUEST_SHAPES.getAvatar),
  getChats: withBodyShape(REQUEST_SHAPES.getChats),
  downloadFile: withBodyShape(REQUEST_SHAPES.downloadFile),
  deleteMessage: withBodyShape(REQUEST_SHAPES.deleteMessage),
  editMessage: withBodyShape(REQUEST_SHAPES.editMessage),
  readChat: withBodyShape(REQUEST_SHAPES.readChat),
  archiveChat: withBodyShape(REQUEST_SHAPES.archiveChat),
  unarchiveChat: withBodyShape(REQUEST_SHAPES.unarchiveChat),
  setDisappearingChat: withBodyShape(REQUEST_SHAPES.setDisappearingChat),
  // Groups
  createGroup: withBodyShape(REQUEST_SHAPES.createGroup),
  getGroupData: withBodyShape(REQUEST_SHAPES.getGroupData),
  updateGroupName: withBodyShape(REQUEST_SHAPES.updateGroupName),
  updateGroupSettings: withBodyShape(REQUEST_SHAPES.updateGroupSettings),
  addGroupParticipant: withBodyShape(REQUEST_SHAPES.addGroupParticipant),
  removeGroupParticipant: withBodyShape(REQUEST_SHAPES.removeGroupParticipant),
  setGroupAdmin: withBodyShape(REQUEST_SHAPES.setGroupAdmin),
  removeAdmin: withBodyShape(REQUEST_SHAPES.removeAdmin),
  setGroupPicture: withBodyShape(REQUEST_SHAPES.setGroupPicture),
  leaveGroup: withBodyShape(REQUEST_SHAPES.leaveGroup),
  // Account, queues and calls
  getStatusInstance: withBodyShape(REQUEST_SHAPES.getStatusInstance),
  getStateInstanceHistory: withBodyShape(REQUEST_SHAPES.getStateInstanceHistory),
  reboot: withBodyShape(REQUEST_SHAPES.reboot),
  logout: withBodyShape(REQUEST_SHAPES.logout),
  qr: withBodyShape(REQUEST_SHAPES.qr),
  getAuthorizationCode: withBodyShape(REQUEST_SHAPES.getAuthorizationCode),
  getWaSettings: withBodyShape(REQUEST_SHAPES.getWaSettings),
  getMessagesCount: withBodyShape(REQUEST_SHAPES.getMessagesCount),
  getWebhooksCount: withBodyShape(REQUEST_SHAPES.getWebhooksCount),
  clearWebhooksQueue: withBodyShape(REQUEST_SHAPES.clearWebhooksQueue),
  lastIncomingCalls: withBodyShape(REQUEST_SHAPES.lastIncomingCalls),
  lastOutgoingCalls: withBodyShape(REQUEST_SHAPES.lastOutgoingCalls),
  setProfilePicture: withBodyShape(REQUEST_SHAPES.setProfilePicture),
  // Statuses
  sendTextStatus: withBodyShape(REQUEST_SHAPES.sendTextStatus),
  sendVoiceStatus: withBodyShape(REQUEST_SHAPES.sendVoiceStatus),
  sendMediaStatus: withBodyShape(REQUEST_SHAPES.sendMediaStatus),
  deleteStatus: withBodyShape(REQUEST_SHAPES.deleteStatus),
  getStatusStatistic: withBodyShape(REQUEST_SHAPES.getStatusStatistic),
  getIncomingStatuses: withBodyShape(REQUEST_SHAPES.getIncomingStatuses),
  getOutgoingStatuses: withBodyShape(REQUEST_SHAPES.getOutgoingStatuses),
} as const;

/**
 * Strict variants: an unknown key is an error. Flow steps (`with:`) and the
 * client's typed calls use these, so a typo such as `chatID` is caught.
 */
export const STRICT_REQUEST_SCHEMAS = {
  addContact: strictBodyShape(REQUEST_SHAPES.addContact),
  editContact: strictBodyShape(REQUEST_SHAPES.editContact),
  deleteContact: strictBodyShape(REQUEST_SHAPES.deleteContact),
  getChatHistory: strictBodyShape(REQUEST_SHAPES.getChatHistory),
  getMessage: strictBodyShape(REQUEST_SHAPES.getMessage),
  sendFileByUrl: strictBodyShape(REQUEST_SHAPES.sendFileByUrl),
  lastOutgoingMessages: strictBodyShape(REQUEST_SHAPES.lastOutgoingMessages),
  checkAccount: strictBodyShape(REQUEST_SHAPES.checkAccount),
  getStateInstance: strictBodyShape(REQUEST_SHAPES.getStateInstance),
  sendMessage: strictBodyShape(REQUEST_SHAPES.sendMessage),
  checkWhatsapp: strictBodyShape(REQUEST_SHAPES.checkWhatsapp),
  getSettings: strictBodyShape(REQUEST_SHAPES.getSettings),
  setSettings: strictBodyShape(REQUEST_SHAPES.setSettings).refine(hasASetting, { error: SETTINGS_EMPTY_TEXT }),
  showMessagesQueue: strictBodyShape(REQUEST_SHAPES.showMessagesQueue),
  clearMessagesQueue: strictBodyShape(REQUEST_SHAPES.clearMessagesQueue),
  lastIncomingMessages: strictBodyShape(REQUEST_SHAPES.lastIncomingMessages),
  receiveNotification: strictBodyShape(REQUEST_SHAPES.receiveNotification),
  deleteNotification: strictBodyShape(REQUEST_SHAPES.deleteNotification),
  // Sending
  sendFileByUpload: strictBodyShape(REQUEST_SHAPES.sendFileByUpload),
  uploadFile: strictBodyShape(REQUEST_SHAPES.uploadFile),
  sendLocation: strictBodyShape(REQUEST_SHAPES.sendLocation),
  sendContact: strictBodyShape(REQUEST_SHAPES.sendContact),
  sendPoll: strictBodyShape(REQUEST_SHAPES.sendPoll),
  sendInteractiveButtons: strictBodyShape(REQUEST_SHAPES.sendInteractiveButtons),
  sendInteractiveButtonsReply: strictBodyShape(REQUEST_SHAPES.sendInteractiveButtonsReply),
  forwardMessages: strictBodyShape(REQUEST_SHAPES.forwardMessages),
  sendTyping: strictBodyShape(REQUEST_SHAPES.sendTyping),
  // Messages and chats
  getContacts: strictBodyShape(REQUEST_SHAPES.getContacts),
  getContactInfo: strictBodyShape(REQUEST_SHAPES.getContactInfo),
  getAvatar: strictBodyShape(REQUEST_SHAPES.getAvatar),
  getChats: strictBodyShape(REQUEST_SHAPES.getChats),
  downloadFile: strictBodyShape(REQUEST_SHAPES.downloadFile),
  deleteMessage: strictBodyShape(REQUEST_SHAPES.deleteMessage),
  editMessage: strictBodyShape(REQUEST_SHAPES.editMessage),
  readChat: strictBodyShape(REQUEST_SHAPES.readChat),
  archiveChat: strictBodyShape(REQUEST_SHAPES.archiveChat),
  unarchiveChat: strictBodyShape(REQUEST_SHAPES.unarchiveChat),
  setDisappearingChat: strictBodyShape(REQUEST_SHAPES.setDisappearingChat),
  // Groups
  createGroup: strictBodyShape(REQUEST_SHAPES.createGroup),
  getGroupData: strictBodyShape(REQUEST_SHAPES.getGroupData),
  updateGroupName: strictBodyShape(REQUEST_SHAPES.updateGroupName),
  updateGroupSettings: strictBodyShape(REQUEST_SHAPES.updateGroupSettings),
  addGroupParticipant: strictBodyShape(REQUEST_SHAPES.addGroupParticipant),
  removeGroupParticipant: strictBodyShape(REQUEST_SHAPES.removeGroupParticipant),
  setGroupAdmin: strictBodyShape(REQUEST_SHAPES.setGroupAdmin),
  removeAdmin: strictBodyShape(REQUEST_SHAPES.removeAdmin),
  setGroupPicture: strictBodyShape(REQUEST_SHAPES.setGroupPicture),
  leaveGroup: strictBodyShape(REQUEST_SHAPES.leaveGroup),
  // Account, queues and calls
  getStatusInstance: strictBodyShape(REQUEST_SHAPES.getStatusInstance),
  getStateInstanceHistory: strictBodyShape(REQUEST_SHAPES.getStateInstanceHistory),
  reboot: strictBodyShape(REQUEST_SHAPES.reboot),
  logout: strictBodyShape(REQUEST_SHAPES.logout),
  qr: strictBodyShape(REQUEST_SHAPES.qr),
  getAuthorizationCode: strictBodyShape(REQUEST_SHAPES.getAuthorizationCode),
  getWaSettings: strictBodyShape(REQUEST_SHAPES.getWaSettings),
  getMessagesCount: strictBodyShape(REQUEST_SHAPES.getMessagesCount),
  getWebhooksCount: strictBodyShape(REQUEST_SHAPES.getWebhooksCount),
  clearWebhooksQueue: strictBodyShape(REQUEST_SHAPES.clearWebhooksQueue),
  lastIncomingCalls: strictBodyShape(REQUEST_SHAPES.lastIncomingCalls),
  lastOutgoingCalls: strictBodyShape(REQUEST_SHAPES.lastOutgoingCalls),
  setProfilePicture: strictBodyShape(REQUEST_SHAPES.setProfilePicture),
  // Statuses
  sendTextStatus: strictBodyShape(REQUEST_SHAPES.sendTextStatus),
  sendVoiceStatus: strictBodyShape(REQUEST_SHAPES.sendVoiceStatus),
  sendMediaStatus: strictBodyShape(REQUEST_SHAPES.sendMediaStatus),
  deleteStatus: strictBodyShape(REQUEST_SHAPES.deleteStatus),
  getStatusStatistic: strictBodyShape(REQUEST_SHAPES.getStatusStatistic),
  getIncomingStatuses: strictBodyShape(REQUEST_SHAPES.getIncomingStatuses),
  getOutgoingStatuses: strictBodyShape(REQUEST_SHAPES.getOutgoingStatuses),
} as const;
