/**
 * Incoming notifications ("webhooks" in the service's documentation): what
 * receiveNotification answers in `body` and what a webhook receiver gets as
 * the POST body. The shapes follow the service's published formats; msgflow's
 * local service produces exactly these, and the engine's notification
 * triggers read them.
 */

/** The notification types msgflow produces and understands. */
export const NOTIFICATION_TYPES = [
  'incomingMessageReceived',
  'outgoingMessageReceived',
  'outgoingAPIMessageReceived',
  'outgoingMessageStatus',
  'stateInstanceChanged',
  // Account, queues and calls
  'incomingCall',
  // The account's standing and its handset
  'incomingBlock',
  'quotaExceeded',
  'deviceInfo',
] as const;

export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** The account's state, as getStateInstance answers it and stateInstanceChanged reports it. */
export const INSTANCE_STATES = ['notAuthorized', 'authorized', 'blocked', 'sleepMode', 'starting', 'yellowCard'] as const;

export type InstanceState = (typeof INSTANCE_STATES)[number];

/** A location as the service shows it: in a notification (`locationMessageData`) and in the journals (`location`). */
export interface LocationData {
  latitude: number;
  longitude: number;
  nameLocation?: string;
  address?: string;
  jpegThumbnail?: string;
  forwardingScore?: number;
  isForwarded?: boolean;
}

/** Statuses an outgoingMessageStatus notification carries. */
export const OUTGOING_STATUSES = ['sent', 'delivered', 'read', 'failed', 'noAccount', 'notInGroup', 'yellowCard'] as const;

export type OutgoingStatus = (typeof OUTGOING_STATUSES)[number];

/** Which instance a notification comes from. */
export interface InstanceData {
  /** The instance id, a number as the service sends it. */
  idInstance: number;
  /** The account's own chat id, e.g. `79001234567@c.us`. */
  wid: string;
  /** @default 'whatsapp' */
  typeInstance: string;
}

interface NotificationBase {
  instanceData: InstanceData;
  /** UNIX time, seconds. */
  timestamp: number;
}

export interface SenderData {
  chatId: string;
  chatName: string;
  sender: string;
  senderName: string;
  senderContactName: string;
}

export interface FileMessageData {
  downloadUrl: string;
  caption: string;
  fileName: string;
  jpegThumbnail: string;
  mimeType: string;
  isAnimated?: boolean;
  forwardingScore?: number;
  isForwarded?: boolean;
}

/**
 * The message inside incomingMessageReceived / outgoing*MessageReceived:
 * `typeMessage` says which of the data members is present.
 */
export interface NotificationMessageData {
  typeMessage: string;
  /** typeMessage `textMessage`. */
  textMessageData?: { textMessage: string };
  /**
   * typeMessage `extendedTextMessage` (a text with a link preview),
   * `quotedMessage` (a text quoting a message: with `stanzaId` and
   * `participant` of the quoted one) and `reactionMessage` (the emoji).
   */
  extendedTextMessageData?: {
    text: string;
    description?: string;
    title?: string;
    previewType?: string;
    jpegThumbnail?: string;
    forwardingScore?: number;
    isForwarded?: boolean;
    stanzaId?: string;
    participant?: string;
  };
  /** typeMessage imageMessage, videoMessage, documentMessage, audioMessage, stickerMessage. */
  fileMessageData?: FileMessageData;
  /**
   * The message this one quotes or reacts to: its id, author and (for a
   * quote) kind, with the quoted content's fields (e.g. `textMessage`).
   */
  quotedMessage?: { stanzaId: string; participant: string; typeMessage?: string; textMessage?: string; [field: string]: unknown };
  locationMessageData?: LocationData;
  contactMessageData?: { displayName: string; vcard: string; forwardingScore?: number; isForwarded?: boolean };
  // Messages and chats
  /** typeMessage `editedMessage` (editMessage): the new text and the edited message's id. */
  editedMessageData?: { textMessage: string; stanzaId: string };
  /** typeMessage `deletedMessage` (deleteMessage): the deleted message's id. */
  deletedMessageData?: { stanzaId: string };
  // Sending: the kinds the service documents beyond the spec's list.
  /** typeMessage `pollMessage` (name, options) and `pollUpdateMessage` (stanzaId: the poll; votes: every option with its voters). */
  pollMessageData?: {
    stanzaId?: string;
    name: string;
    options?: { optionName: string }[];
    votes?: { optionName: string; optionVoters: string[] }[];
    multipleAnswers: boolean;
  };
  /** typeMessage `contactsArrayMessage` (the service nests it so). */
  messageData?: { contacts: { displayName: string; vcard: string }[]; forwardingScore?: number; isForwarded?: boolean };
  /** typeMessage `interactiveButtons` (sendInteractiveButtons). */
  interactiveButtons?: InteractiveButtonsBody;
  /** typeMessage `interactiveButtonsReply` (sendInteractiveButtonsReply). */
  interactiveButtonsReply?: InteractiveButtonsBody;
  /** typeMessage `buttonsResponseMessage`: a button of a buttons message was pressed. */
  buttonsResponseMessage?: { stanzaId: string; selectedButtonId: string; selectedButtonText: string };
  /** typeMessage `listResponseMessage`: a row of a list message was chosen. */
  listResponseMessage?: { stanzaId: string; title: string; listType: number; singleSelectReply: string };
  /** typeMessage `templateButtonReplyMessage`: a template button was pressed. */
  templateButtonReplyMessage?: { stanzaId: string; selectedIndex: number; selectedId: string; selectedDisplayText: string };
  /** typeMessage `buttonsMessage`, `listMessage`, `templateMessage`, `groupInviteMessage`: as the service sends them. */
  buttonsMessage?: Record<string, unknown>;
  listMessage?: Record<string, unknown>;
  templateMessage?: Record<string, unknown>;
  groupInviteMessageData?: Record<string, unknown>;
}

/** A message with buttons, as sendInteractiveButtons(Reply) takes it. */
export interface InteractiveButtonsBody {
  header: string;
  body: string;
  footer: string;
  buttons: { type?: string; buttonId: string; buttonText: string; copyCode?: string; phoneNumber?: string; url?: string }[];
}

export interface MessageNotification<
  T extends 'incomingMessageReceived' | 'outgoingMessageReceived' | 'outgoingAPIMessageReceived',
> extends NotificationBase {
  typeWebhook: T;
  idMessage: string;
  senderData: SenderData;
  messageData: NotificationMessageData;
}

export type IncomingMessageReceived = MessageNotification<'incomingMessageReceived'>;
/** A message sent from the phone (not through the API). */
export type OutgoingMessageReceived = MessageNotification<'outgoingMessageReceived'>;
/** A message sent through the API left the send queue. */
export type OutgoingAPIMessageReceived = MessageNotification<'outgoingAPIMessageReceived'>;

export interface OutgoingMessageStatus extends NotificationBase {
  typeWebhook: 'outgoingMessageStatus';
  chatId: string;
  idMessage: string;
  status: OutgoingStatus;
  /** Why, for `failed` (e.g. the file could not be fetched) and `noAccount`. */
  description?: string;
  /** Whether the message was sent through the API. */
  sendByApi: boolean;
}

export interface StateInstanceChanged extends NotificationBase {
  typeWebhook: 'stateInstanceChanged';
  stateInstance: InstanceState;
}

/** incomingCall's statuses: `offer` when the call comes in, then how it ended. */
export const CALL_STATUSES = ['offer', 'pickUp', 'hangUp', 'missed', 'declined'] as const;

/** A call to the account: `offer` when it rings, then one more with how it ended (pickUp, hangUp, missed, declined). */
export interface IncomingCall extends NotificationBase {
  typeWebhook: 'incomingCall';
  /** The caller's chat id. */
  from: string;
  status: (typeof CALL_STATUSES)[number];
  /** The call's id: the same in its `offer` and its end. */
  idMessage: string;
}

/** incomingBlock's chat states: the service documents `blocked` only (a contact blocked the account). */
export const BLOCK_CHAT_STATES = ['blocked'] as const;

/**
 * A contact blocked the account (or complained about it). The service sends
 * `chatId` as the placeholder `10000000000@c.us` by default: WhatsApp no
 * longer tells who blocked. Messages to a contact who blocked stay `sent`.
 */
export interface IncomingBlock extends NotificationBase {
  typeWebhook: 'incomingBlock';
  /** The chat that blocked; the service's default is `10000000000@c.us`. */
  chatId: string;
  chatState: (typeof BLOCK_CHAT_STATES)[number];
}

/** The chat quota's state in quotaExceeded (the same object as a 466's `correspondentsStatus`). */
export interface QuotaExceededData {
  /** The limitation: `correspondents` (chats a month). */
  method: string;
  /** Chats used this month. */
  used: number;
  /** Chats allowed a month (the Developer plan: 3). */
  total: number;
  /** `CORRESPONDENTS_QUOTA_EXCEEDED` once exceeded. */
  status: string;
  /** The service's text, naming the chats that still work. */
  description: string;
}

/** The Developer plan's chat quota refused a message to one chat more. */
export interface QuotaExceeded extends NotificationBase {
  typeWebhook: 'quotaExceeded';
  quotaData: QuotaExceededData;
}

/** The handset running WhatsApp: its platform, versions and battery. */
export interface DeviceData {
  platform: string;
  deviceManufacturer: string;
  deviceModel: string;
  osVersion: string;
  waVersion: string;
  /** Battery level, percent. */
  battery: number;
}

/** The handset's data (deviceWebhook): the battery level and the device running WhatsApp. */
export interface DeviceInfo extends NotificationBase {
  typeWebhook: 'deviceInfo';
  deviceData: DeviceData;
}

/** Any notification body, discriminated by `typeWebhook`. */
export type NotificationBody =
  | IncomingMessageReceived
  | OutgoingMessageReceived
  | OutgoingAPIMessageReceived
  | OutgoingMessageStatus
  | StateInstanceChanged
  | IncomingCall
  | IncomingBlock
  | QuotaExceeded
  | DeviceInfo;

/**
 * A value as it may arrive over the network: any field may be missing, and
 * a text field may hold a value added to the service since (a new status).
 */
export type Received<T> = T extends string
  ? string
  : T extends number | boolean
    ? T
    : T extends object
      ? { readonly [K in keyof T]?: Received<T[K]> }
      : T;

/**
 * A notification body of a type msgflow reads, as received: discriminated
 * by `typeWebhook` like {@link NotificationBody}, every other field typed but
 * possibly absent. What the engine reads once the body is parsed where it
 * entered (engine/notify/body.ts `parseNotification`).
 */
export type ReceivedBody = NotificationBody extends infer B
  ? B extends NotificationBody
    ? Received<Omit<B, 'typeWebhook'>> & { readonly typeWebhook: B['typeWebhook'] }
    : never
  : never;

/**
 * receiveNotification's answer when a notification is waiting: `receiptId`
 * is what deleteNotification takes to remove it. The answer is `null` when
 * none arrived within receiveTimeout.
 */
export interface ReceivedNotification {
  receiptId: number;
  body: NotificationBody;
}

export function isNotificationType(s: string): s is NotificationType {
  return (NOTIFICATION_TYPES as readonly string[]).includes(s);
}
