/**
 * Request and response types of the API methods, as the spec gives them.
 * Request types are inferred from the shared zod schemas (see schemas.ts) so
 * that the client, the local service and the actions cannot drift apart.
 */
import type { z } from 'zod';
import type { REQUEST_SCHEMAS } from './schemas.js';
import type { ApiMethod } from './methods.js';
import type { InstanceState, LocationData, ReceivedNotification } from './notifications.js';

export type AddContactRequest = z.input<(typeof REQUEST_SCHEMAS)['addContact']>;
export type EditContactRequest = z.input<(typeof REQUEST_SCHEMAS)['editContact']>;
export type DeleteContactRequest = z.input<(typeof REQUEST_SCHEMAS)['deleteContact']>;
export type GetChatHistoryRequest = z.input<(typeof REQUEST_SCHEMAS)['getChatHistory']>;
export type GetMessageRequest = z.input<(typeof REQUEST_SCHEMAS)['getMessage']>;
export type SendFileByUrlRequest = z.input<(typeof REQUEST_SCHEMAS)['sendFileByUrl']>;
export type LastOutgoingMessagesRequest = z.input<(typeof REQUEST_SCHEMAS)['lastOutgoingMessages']>;
export type CheckAccountRequest = z.input<(typeof REQUEST_SCHEMAS)['checkAccount']>;
export type GetStateInstanceRequest = z.input<(typeof REQUEST_SCHEMAS)['getStateInstance']>;
export type SendMessageRequest = z.input<(typeof REQUEST_SCHEMAS)['sendMessage']>;
export type CheckWhatsappRequest = z.input<(typeof REQUEST_SCHEMAS)['checkWhatsapp']>;
export type GetSettingsRequest = z.input<(typeof REQUEST_SCHEMAS)['getSettings']>;
export type SetSettingsRequest = z.input<(typeof REQUEST_SCHEMAS)['setSettings']>;
export type ShowMessagesQueueRequest = z.input<(typeof REQUEST_SCHEMAS)['showMessagesQueue']>;
export type ClearMessagesQueueRequest = z.input<(typeof REQUEST_SCHEMAS)['clearMessagesQueue']>;
export type LastIncomingMessagesRequest = z.input<(typeof REQUEST_SCHEMAS)['lastIncomingMessages']>;
export type ReceiveNotificationRequest = z.input<(typeof REQUEST_SCHEMAS)['receiveNotification']>;
export type DeleteNotificationRequest = z.input<(typeof REQUEST_SCHEMAS)['deleteNotification']>;
// Sending
export type SendFileByUploadRequest = z.input<(typeof REQUEST_SCHEMAS)['sendFileByUpload']>;
export type UploadFileRequest = z.input<(typeof REQUEST_SCHEMAS)['uploadFile']>;
export type SendLocationRequest = z.input<(typeof REQUEST_SCHEMAS)['sendLocation']>;
export type SendContactRequest = z.input<(typeof REQUEST_SCHEMAS)['sendContact']>;
export type SendPollRequest = z.input<(typeof REQUEST_SCHEMAS)['sendPoll']>;
export type SendInteractiveButtonsRequest = z.input<(typeof REQUEST_SCHEMAS)['sendInteractiveButtons']>;
export type SendInteractiveButtonsReplyRequest = z.input<(typeof REQUEST_SCHEMAS)['sendInteractiveButtonsReply']>;
export type ForwardMessagesRequest = z.input<(typeof REQUEST_SCHEMAS)['forwardMessages']>;
export type SendTypingRequest = z.input<(typeof REQUEST_SCHEMAS)['sendTyping']>;
// Messages and chats
export type GetContactsRequest = z.input<(typeof REQUEST_SCHEMAS)['getContacts']>;
export type GetContactInfoRequest = z.input<(typeof REQUEST_SCHEMAS)['getContactInfo']>;
export type GetAvatarRequest = z.input<(typeof REQUEST_SCHEMAS)['getAvatar']>;
export type GetChatsRequest = z.input<(typeof REQUEST_SCHEMAS)['getChats']>;
export type DownloadFileRequest = z.input<(typeof REQUEST_SCHEMAS)['downloadFile']>;
export type DeleteMessageRequest = z.input<(typeof REQUEST_SCHEMAS)['deleteMessage']>;
export type EditMessageRequest = z.input<(typeof REQUEST_SCHEMAS)['editMessage']>;
export type ReadChatRequest = z.input<(typeof REQUEST_SCHEMAS)['readChat']>;
export type ArchiveChatRequest = z.input<(typeof REQUEST_SCHEMAS)['archiveChat']>;
export type UnarchiveChatRequest = z.input<(typeof REQUEST_SCHEMAS)['unarchiveChat']>;
export type SetDisappearingChatRequest = z.input<(typeof REQUEST_SCHEMAS)['setDisappearingChat']>;
// Groups
export type CreateGroupRequest = z.input<(typeof REQUEST_SCHEMAS)['createGroup']>;
export type GetGroupDataRequest = z.input<(typeof REQUEST_SCHEMAS)['getGroupData']>;
export type UpdateGroupNameRequest = z.input<(typeof REQUEST_SCHEMAS)['updateGroupName']>;
export type UpdateGroupSettingsRequest = z.input<(typeof REQUEST_SCHEMAS)['updateGroupSettings']>;
export type AddGroupParticipantRequest = z.input<(typeof REQUEST_SCHEMAS)['addGroupParticipant']>;
export type RemoveGroupParticipantRequest = z.input<(typeof REQUEST_SCHEMAS)['removeGroupParticipant']>;
export type SetGroupAdminRequest = z.input<(typeof REQUEST_SCHEMAS)['setGroupAdmin']>;
export type RemoveAdminRequest = z.input<(typeof REQUEST_SCHEMAS)['removeAdmin']>;
export type SetGroupPictureRequest = z.input<(typeof REQUEST_SCHEMAS)['setGroupPicture']>;
export type LeaveGroupRequest = z.input<(typeof REQUEST_SCHEMAS)['leaveGroup']>;
// Account, queues and calls
export type GetStatusInstanceRequest = z.input<(typeof REQUEST_SCHEMAS)['getStatusInstance']>;
export type GetStateInstanceHistoryRequest = z.input<(typeof REQUEST_SCHEMAS)['getStateInstanceHistory']>;
export type RebootRequest = z.input<(typeof REQUEST_SCHEMAS)['reboot']>;
export type LogoutRequest = z.input<(typeof REQUEST_SCHEMAS)['logout']>;
export type QrRequest = z.input<(typeof REQUEST_SCHEMAS)['qr']>;
export type GetAuthorizationCodeRequest = z.input<(typeof REQUEST_SCHEMAS)['getAuthorizationCode']>;
export type GetWaSettingsRequest = z.input<(typeof REQUEST_SCHEMAS)['getWaSettings']>;
export type GetMessagesCountRequest = z.input<(typeof REQUEST_SCHEMAS)['getMessagesCount']>;
export type GetWebhooksCountRequest = z.input<(typeof REQUEST_SCHEMAS)['getWebhooksCount']>;
export type ClearWebhooksQueueRequest = z.input<(typeof REQUEST_SCHEMAS)['clearWebhooksQueue']>;
export type LastIncomingCallsRequest = z.input<(typeof REQUEST_SCHEMAS)['lastIncomingCalls']>;
export type LastOutgoingCallsRequest = z.input<(typeof REQUEST_SCHEMAS)['lastOutgoingCalls']>;
export type SetProfilePictureRequest = z.input<(typeof REQUEST_SCHEMAS)['setProfilePicture']>;
// Statuses
export type SendTextStatusRequest = z.input<(typeof REQUEST_SCHEMAS)['sendTextStatus']>;
export type SendVoiceStatusRequest = z.input<(typeof REQUEST_SCHEMAS)['sendVoiceStatus']>;
export type SendMediaStatusRequest = z.input<(typeof REQUEST_SCHEMAS)['sendMediaStatus']>;
export type DeleteStatusRequest = z.input<(typeof REQUEST_SCHEMAS)['deleteStatus']>;
export type GetStatusStatisticRequest = z.input<(typeof REQUEST_SCHEMAS)['getStatusStatistic']>;
export type GetIncomingStatusesRequest = z.input<(typeof REQUEST_SCHEMAS)['getIncomingStatuses']>;
export type GetOutgoingStatusesRequest = z.input<(typeof REQUEST_SCHEMAS)['getOutgoingStatuses']>;

/** A request after validation: defaults applied, phone numbers as numbers. */
export type ParsedRequest<M extends ApiMethod> = z.output<(typeof REQUEST_SCHEMAS)[M]>;

export type MessageType = 'outgoing' | 'incoming';
/**
 * Outgoing message status. `pending`: still in the send queue (accepted, not
 * yet released; also while the instance is not authorized).
 */
/**
 * An outgoing message's status in the journals. Besides the sending ones, the service's journals
 * return `noAccount` (nobody has an account on the number), `notInGroup` (the account is not a member
 * of the group) and `yellowCard` (sending was suspended), and `failed`.
 */
export type StatusMessage = 'pending' | 'sent' | 'delivered' | 'read' | 'failed' | 'noAccount' | 'notInGroup' | 'yellowCard';
export type ChatType = 'user' | 'group' | 'supergroup' | 'channel' | 'bot';
export type TypeMessage =
  | 'textMessage'
  | 'extendedTextMessage'
  | 'imageMessage'
  | 'videoMessage'
  | 'documentMessage'
  | 'audioMessage'
  | 'pollMessage'
  | 'locationMessage'
  | 'stickerMessage'
  | 'reactionMessage'
  | 'contactMessage'
  // Sending: the kinds the service documents beyond the spec's list.
  | 'quotedMessage'
  | 'contactsArrayMessage'
  | 'pollUpdateMessage'
  | 'buttonsMessage'
  | 'listMessage'
  | 'templateMessage'
  | 'buttonsResponseMessage'
  | 'listResponseMessage'
  | 'templateButtonReplyMessage'
  | 'interactiveButtons'
  | 'interactiveButtonsReply'
  | 'groupInviteMessage';

export const TYPE_MESSAGES: readonly TypeMessage[] = [
  'textMessage',
  'extendedTextMessage',
  'imageMessage',
  'videoMessage',
  'documentMessage',
  'audioMessage',
  'pollMessage',
  'locationMessage',
  'stickerMessage',
  'reactionMessage',
  'contactMessage',
  // Sending
  'quotedMessage',
  'contactsArrayMessage',
  'pollUpdateMessage',
  'buttonsMessage',
  'listMessage',
  'templateMessage',
  'buttonsResponseMessage',
  'listResponseMessage',
  'templateButtonReplyMessage',
  'interactiveButtons',
  'interactiveButtonsReply',
  'groupInviteMessage',
];

/** Kinds that carry a file: downloadUrl, caption, fileName, jpegThumbnail, mimeType, isAnimated. */
export const FILE_TYPE_MESSAGES: readonly TypeMessage[] = ['imageMessage', 'videoMessage', 'documentMessage', 'audioMessage'];

/** A message as getChatHistory, getMessage and lastOutgoingMessages return it. */
export interface Message {
  type: MessageType;
  idMessage: string;
  /** UNIX time, seconds. */
  timestamp: number;
  typeMessage: TypeMessage;
  chatId: string;
  chatType?: ChatType;
  /** Outgoing only. `pending` while queued; `sent` while neither delivered nor read. */
  statusMessage?: StatusMessage;
  /** Outgoing only: true when sent through the API. */
  sendByApi?: boolean;
  senderId?: string;
  senderName?: string;
  senderType?: ChatType;
  senderContactName?: string;
  isForwarded?: boolean;
  forwardingScore?: number;
  deletedMessageId?: string;
  editedMessageId?: string;
  isEdited?: boolean;
  isDeleted?: boolean;
  textMessage?: string;
  downloadUrl?: string;
  caption?: string;
  fileName?: string;
  jpegThumbnail?: string;
  mimeType?: string;
  isAnimated?: boolean;
  videoNote?: boolean;
  extendedTextMessageData?: { text: string };
  /**
   * The message this one quotes (or reacts to): its id and author, and for a
   * quote also its kind and content (e.g. `textMessage`), as the service
   * shows them.
   */
  quotedMessage?: QuotedMessage;
  /** extendedTextMessage: the link preview (title, description, previewType, jpegThumbnail). */
  extendedTextMessage?: LinkPreview;
  location?: LocationData;
  contact?: {
    chatId: string;
    displayName: string;
    vcard: string;
    forwardingScore?: number;
    isForwarded?: boolean;
    urlAvatar?: string;
    phoneNumber?: number;
  };
  /** Poll messages (the spec lists the kind without its fields); a pollUpdateMessage's `stanzaId` and `votes`. */
  pollMessageData?: PollMessageData;
  // Sending: the kinds the service documents beyond the spec's list.
  /** contactsArrayMessage. */
  contacts?: { displayName: string; vcard: string }[];
  /** sendInteractiveButtons. */
  interactiveButtons?: InteractiveButtonsData;
  /** sendInteractiveButtonsReply. */
  interactiveButtonsReply?: InteractiveButtonsData;
  buttonsMessage?: Record<string, unknown>;
  listMessage?: Record<string, unknown>;
  templateMessage?: Record<string, unknown>;
  groupInviteMessageData?: Record<string, unknown>;
  /** A button of a buttons message pressed: the message (`stanzaId`) and the button. */
  buttonsResponseMessage?: { stanzaId: string; selectedButtonId: string; selectedButtonText: string };
  listResponseMessage?: { stanzaId: string; title: string; listType: number; singleSelectReply: string };
  templateButtonReplyMessage?: { stanzaId: string; selectedIndex: number; selectedId: string; selectedDisplayText: string };
}

/** The message a message quotes, as journals and notifications show it. */
export interface QuotedMessage {
  stanzaId: string;
  participant: string;
  /** The quoted message's kind; absent for a reaction. */
  typeMessage?: string;
  /** The quoted content: `textMessage`, a file's `downloadUrl`/`caption`, `location`, `contact`, ... */
  [field: string]: unknown;
}

/** A link preview: what the link gave, or sendMessage's customPreview. */
export interface LinkPreview {
  text: string;
  title: string;
  description: string;
  /** `LARGE` or `SMALL` (typePreview), `NONE` without a preview. */
  previewType: string;
  jpegThumbnail: string;
  forwardingScore?: number;
  isForwarded?: boolean;
}

export interface PollMessageData {
  /** pollUpdateMessage: the poll's idMessage. */
  stanzaId?: string;
  name: string;
  options?: { optionName: string }[];
  /** pollUpdateMessage: every option with who chose it now. */
  votes?: { optionName: string; optionVoters: string[] }[];
  multipleAnswers?: boolean;
}

export interface InteractiveButtonsData {
  header: string;
  body: string;
  footer: string;
  buttons: { type?: string; buttonId: string; buttonText: string; copyCode?: string; phoneNumber?: string; url?: string }[];
}

export interface AddContactResponse {
  addContact: boolean;
}
export interface EditContactResponse {
  editContact: boolean;
}
export interface DeleteContactResponse {
  deleteContact: boolean;
}
export type GetChatHistoryResponse = Message[];
export type GetMessageResponse = Message;
export interface SendFileByUrlResponse {
  idMessage: string;
}
export type LastOutgoingMessagesResponse = Message[];

/** checkAccount's success body. With no account: `{ exist: false, chatId: "" }` only. */
export type CheckAccountResponse =
  { exist: true; chatId: string; username?: string; phoneNumber?: number; fromCache: boolean } | { exist: false; chatId: '' };

export interface GetStateInstanceResponse {
  stateInstance: InstanceState;
}
export interface SendMessageResponse {
  idMessage: string;
}
export interface CheckWhatsappResponse {
  existsWhatsapp: boolean;
  chatId: string;
}

/** The instance's settings, as getSettings answers them. */
export interface InstanceSettings {
  /** The account's own chat id. */
  wid: string;
  /** Where notifications are pushed; empty: they wait for receiveNotification. @default '' */
  webhookUrl: string;
  /** Sent as `Authorization: Bearer <webhookUrlToken>` with each push. @default '' */
  webhookUrlToken: string;
  /** The send queue's interval, ms. @default local.instances[].sendIntervalMs */
  delaySendMessagesMilliseconds: number;
  /** @default 'no' */
  markIncomingMessagesReaded: 'yes' | 'no';
  /** @default 'no' */
  markIncomingMessagesReadedOnReply: 'yes' | 'no';
  /** outgoingMessageStatus notifications. @default 'no' */
  outgoingWebhook: 'yes' | 'no';
  /** outgoingMessageReceived notifications (sent from the phone). @default 'no' */
  outgoingMessageWebhook: 'yes' | 'no';
  /** outgoingAPIMessageReceived notifications. @default 'no' */
  outgoingAPIMessageWebhook: 'yes' | 'no';
  /** incomingMessageReceived notifications. @default 'no' */
  incomingWebhook: 'yes' | 'no';
  /** stateInstanceChanged notifications. @default 'no' */
  stateWebhook: 'yes' | 'no';
  /** Votes on polls (incomingMessageReceived of typeMessage pollUpdateMessage), with incomingWebhook. @default 'no' */
  pollMessageWebhook: 'yes' | 'no';
  /** Show the account as online. @default 'no' */
  keepOnlineStatus: 'yes' | 'no';
  /** incomingCall notifications. @default 'no' */
  incomingCallWebhook: 'yes' | 'no';
  /** incomingBlock notifications. @default 'no' */
  incomingBlockWebhook: 'yes' | 'no';
  /** deviceInfo notifications (the service: temporarily out of service). @default 'no' */
  deviceWebhook: 'yes' | 'no';
  /** Edited messages (typeMessage editedMessage), with incomingWebhook / outgoingMessageWebhook. @default 'no' */
  editedMessageWebhook: 'yes' | 'no';
  /** Deleted messages (typeMessage deletedMessage), with incomingWebhook / outgoingMessageWebhook. @default 'no' */
  deletedMessageWebhook: 'yes' | 'no';
  /** Deprecated by the service. @default 'no' */
  statusInstanceWebhook: 'yes' | 'no';
  /** Deprecated by the service. @default 'no' */
  enableMessagesHistory: 'yes' | 'no';
  /** Deprecated by the service. @default 'no' */
  sharedSession: 'yes' | 'no';
  /** Deprecated by the service. @default '' */
  countryInstance: string;
  /** Deprecated by the service. @default '' */
  typeAccount: string;
}

export type GetSettingsResponse = InstanceSettings;
export interface SetSettingsResponse {
  saveSettings: true;
}

/** One message waiting in the send queue, as showMessagesQueue lists it. */
export interface QueuedMessage {
  /** The message's id (every type but ForwardMessages). */
  messageID: string;
  /** ForwardMessages: the new ids of the forwarded messages (messageID is the first). */
  messagesIDs?: string[];
  /** The method that queued it (sendFileByUrl also for sendFileByUpload, ForwardMessages capitalised as the service does). */
  type:
    | 'sendMessage'
    | 'sendFileByUrl'
    | 'sendLocation'
    | 'sendContact'
    | 'sendPoll'
    | 'sendInteractiveButtons'
    | 'sendInteractiveButtonsReply'
    | 'ForwardMessages';
  /** The request as queued. */
  body: {
    chatId: string;
    message?: string;
    urlFile?: string;
    fileName?: string;
    caption?: string;
    quotedMessageId?: string;
    [field: string]: unknown;
  };
  /** Always `pending`: the message has not been released. */
  statusMessage: 'pending';
}

export type ShowMessagesQueueResponse = QueuedMessage[];
export interface ClearMessagesQueueResponse {
  isCleared: boolean;
}
export type LastIncomingMessagesResponse = Message[];
/** A waiting notification, or `null` when none arrived within receiveTimeout. */
export type ReceiveNotificationResponse = ReceivedNotification | null;
/** `result: false` when no notification had that receiptId (already deleted or expired). */
export interface DeleteNotificationResponse {
  result: boolean;
}

export interface ResponseMap {
  addContact: AddContactResponse;
  editContact: EditContactResponse;
  deleteContact: DeleteContactResponse;
  getChatHistory: GetChatHistoryResponse;
  getMessage: GetMessageResponse;
  sendFileByUrl: SendFileByUrlResponse;
  lastOutgoingMessages: LastOutgoingMessagesResponse;
  checkAccount: CheckAccountResponse;
  getStateInstance: GetStateInstanceResponse;
  sendMessage: SendMessageResponse;
  checkWhatsapp: CheckWhatsappResponse;
  getSettings: GetSettingsResponse;
  setSettings: SetSettingsResponse;
  showMessagesQueue: ShowMessagesQueueResponse;
  clearMessagesQueue: ClearMessagesQueueResponse;
  lastIncomingMessages: LastIncomingMessagesResponse;
  receiveNotification: ReceiveNotificationResponse;
  deleteNotification: DeleteNotificationResponse;
  // Sending
  sendFileByUpload: SendFileByUploadResponse;
  uploadFile: UploadFileResponse;
  sendLocation: SendLocationResponse;
  sendContact: SendContactResponse;
  sendPoll: SendPollResponse;
  sendInteractiveButtons: SendInteractiveButtonsResponse;
  sendInteractiveButtonsReply: SendInteractiveButtonsReplyResponse;
  forwardMessages: ForwardMessagesResponse;
  sendTyping: SendTypingResponse;
  // Messages and chats
  getContacts: GetContactsResponse;
  getContactInfo: GetContactInfoResponse;
  getAvatar: GetAvatarResponse;
  getChats: GetChatsResponse;
  downloadFile: DownloadFileResponse;
  deleteMessage: DeleteMessageResponse;
  editMessage: EditMessageResponse;
  readChat: ReadChatResponse;
  archiveChat: ArchiveChatResponse;
  unarchiveChat: UnarchiveChatResponse;
  setDisappearingChat: SetDisappearingChatResponse;
  // Groups
  createGroup: CreateGroupResponse;
  getGroupData: GetGroupDataResponse;
  updateGroupName: UpdateGroupNameResponse;
  updateGroupSettings: UpdateGroupSettingsResponse;
  addGroupParticipant: AddGroupParticipantResponse;
  removeGroupParticipant: RemoveGroupParticipantResponse;
  setGroupAdmin: SetGroupAdminResponse;
  removeAdmin: RemoveAdminResponse;
  setGroupPicture: SetGroupPictureResponse;
  leaveGroup: LeaveGroupResponse;
  // Account, queues and calls
  getStatusInstance: GetStatusInstanceResponse;
  getStateInstanceHistory: GetStateInstanceHistoryResponse;
  reboot: RebootResponse;
  logout: LogoutResponse;
  qr: QrResponse;
  getAuthorizationCode: GetAuthorizationCodeResponse;
  getWaSettings: GetWaSettingsResponse;
  getMessagesCount: GetMessagesCountResponse;
  getWebhooksCount: GetWebhooksCountResponse;
  clearWebhooksQueue: ClearWebhooksQueueResponse;
  lastIncomingCalls: LastIncomingCallsResponse;
  lastOutgoingCalls: LastOutgoingCallsResponse;
  setProfilePicture: SetProfilePictureResponse;
  // Statuses
  sendTextStatus: SendTextStatusResponse;
  sendVoiceStatus: SendVoiceStatusResponse;
  sendMediaStatus: SendMediaStatusResponse;
  deleteStatus: DeleteStatusResponse;
  getStatusStatistic: GetStatusStatisticResponse;
  getIncomingStatuses: GetIncomingStatusesResponse;
  getOutgoingStatuses: GetOutgoingStatusesResponse;
}

export interface RequestMap {
  addContact: AddContactRequest;
  editContact: EditContactRequest;
  deleteContact: DeleteContactRequest;
  getChatHistory: GetChatHistoryRequest;
  getMessage: GetMessageRequest;
  sendFileByUrl: SendFileByUrlRequest;
  lastOutgoingMessages: LastOutgoingMessagesRequest;
  checkAccount: CheckAccountRequest;
  getStateInstance: GetStateInstanceRequest;
  sendMessage: SendMessageRequest;
  checkWhatsapp: CheckWhatsappRequest;
  getSettings: GetSettingsRequest;
  setSettings: SetSettingsRequest;
  showMessagesQueue: ShowMessagesQueueRequest;
  clearMessagesQueue: ClearMessagesQueueRequest;
  lastIncomingMessages: LastIncomingMessagesRequest;
  receiveNotification: ReceiveNotificationRequest;
  deleteNotification: DeleteNotificationRequest;
  // Sending
  sendFileByUpload: SendFileByUploadRequest;
  uploadFile: UploadFileRequest;
  sendLocation: SendLocationRequest;
  sendContact: SendContactRequest;
  sendPoll: SendPollRequest;
  sendInteractiveButtons: SendInteractiveButtonsRequest;
  sendInteractiveButtonsReply: SendInteractiveButtonsReplyRequest;
  forwardMessages: ForwardMessagesRequest;
  sendTyping: SendTypingRequest;
  // Messages and chats
  getContacts: GetContactsRequest;
  getContactInfo: GetContactInfoRequest;
  getAvatar: GetAvatarRequest;
  getChats: GetChatsRequest;
  downloadFile: DownloadFileRequest;
  deleteMessage: DeleteMessageRequest;
  editMessage: EditMessageRequest;
  readChat: ReadChatRequest;
  archiveChat: ArchiveChatRequest;
  unarchiveChat: UnarchiveChatRequest;
  setDisappearingChat: SetDisappearingChatRequest;
  // Groups
  createGroup: CreateGroupRequest;
  getGroupData: GetGroupDataRequest;
  updateGroupName: UpdateGroupNameRequest;
  updateGroupSettings: UpdateGroupSettingsRequest;
  addGroupParticipant: AddGroupParticipantRequest;
  removeGroupParticipant: RemoveGroupParticipantRequest;
  setGroupAdmin: SetGroupAdminRequest;
  removeAdmin: RemoveAdminRequest;
  setGroupPicture: SetGroupPictureRequest;
  leaveGroup: LeaveGroupRequest;
  // Account, queues and calls
  getStatusInstance: GetStatusInstanceRequest;
  getStateInstanceHistory: GetStateInstanceHistoryRequest;
  reboot: RebootRequest;
  logout: LogoutRequest;
  qr: QrRequest;
  getAuthorizationCode: GetAuthorizationCodeRequest;
  getWaSettings: GetWaSettingsRequest;
  getMessagesCount: GetMessagesCountRequest;
  getWebhooksCount: GetWebhooksCountRequest;
  clearWebhooksQueue: ClearWebhooksQueueRequest;
  lastIncomingCalls: LastIncomingCallsRequest;
  lastOutgoingCalls: LastOutgoingCallsRequest;
  setProfilePicture: SetProfilePictureRequest;
  // Statuses
  sendTextStatus: SendTextStatusRequest;
  sendVoiceStatus: SendVoiceStatusRequest;
  sendMediaStatus: SendMediaStatusRequest;
  deleteStatus: DeleteStatusRequest;
  getStatusStatistic: GetStatusStatisticRequest;
  getIncomingStatuses: GetIncomingStatusesRequest;
  getOutgoingStatuses: GetOutgoingStatusesRequest;
}

// Sending
export interface SendFileByUploadResponse {
  idMessage: string;
  /** The uploaded file's link (reusable with sendFileByUrl while it is kept). */
  urlFile: string;
}
export interface UploadFileResponse {
  urlFile: string;
}
export interface SendLocationResponse {
  idMessage: string;
}
export interface SendContactResponse {
  idMessage: string;
}
export interface SendPollResponse {
  idMessage: string;
}
export interface SendInteractiveButtonsResponse {
  idMessage: string;
}
export interface SendInteractiveButtonsReplyResponse {
  idMessage: string;
}
/** The forwarded messages' new ids, in the order given. */
export interface ForwardMessagesResponse {
  messages: string[];
}
/** sendTyping answers 200 with an empty body. */
export type SendTypingResponse = void;
// Messages and chats
/** A contact of the account (getContacts): a person or a group chat. */
export interface ContactEntry {
  id: string;
  /** The name the account gives itself on the messenger ('' when unknown). */
  name: string;
  /** The name in the phonebook ('' when not in it). */
  contactName: string;
  type: 'user' | 'group';
}
export type GetContactsResponse = ContactEntry[];
/** A product of a business account's catalogue (getContactInfo). */
export interface ContactProduct {
  id: string;
  imageUrls: { requested: string; original: string };
  reviewStatus: { whatsapp: string };
  availability: string;
  name: string;
  description?: string;
  price: string | null;
  isHidden: boolean;
}
export interface GetContactInfoResponse {
  avatar: string;
  name: string;
  contactName: string;
  email: string;
  category: string;
  description: string;
  products: ContactProduct[];
  chatId: string;
  lastSeen: string | null;
  isArchive: boolean;
  isDisappearing: boolean;
  isMute: boolean;
  /** Seconds (0: messages do not disappear). */
  messageExpiration: number;
  muteExpiration: number | null;
  isBusiness: boolean;
}
export interface GetAvatarResponse {
  /** '' when no avatar is set or privacy hides it. */
  urlAvatar: string;
  /** false when the correspondent's privacy settings hide the avatar. */
  available: boolean;
  /** Personal chats: whether the number has an account. */
  existsWhatsapp?: boolean;
}
/** A chat of the account (getChats). */
export interface ChatEntry {
  archive: boolean;
  id: string;
  /** Seconds: 0, 86400, 604800 or 7776000. */
  ephemeralExpiration: number;
  /** UNIX time, seconds, of the last setDisappearingChat (0: never). */
  ephemeralSettingTimestamp: number;
  name: string;
  type: 'user' | 'group';
}
export type GetChatsResponse = ChatEntry[];
export interface DownloadFileResponse {
  downloadUrl: string;
}
/** deleteMessage answers 200 with an empty body. */
export type DeleteMessageResponse = void;
/** The edit's own id (the edited message keeps its id). */
export interface EditMessageResponse {
  idMessage: string;
}
export interface ReadChatResponse {
  setRead: boolean;
}
/** archiveChat answers 200 with an empty body. */
export type ArchiveChatResponse = void;
/** unarchiveChat answers 200 with an empty body. */
export type UnarchiveChatResponse = void;
export interface SetDisappearingChatResponse {
  chatId: string;
  disappearingMessagesInChat: boolean;
  ephemeralExpiration: number;
}
// Groups
export interface CreateGroupResponse {
  created: boolean;
  /** The new group's id (`…@g.us`); "" when not created. */
  chatId: string;
  groupInviteLink: string;
}
export interface GroupParticipant {
  id: string;
  isAdmin: boolean;
  /** The group's owner (its creator). */
  isSuperAdmin: boolean;
}
export interface GetGroupDataResponse {
  groupId: string;
  owner: string;
  subject: string;
  /** Unix seconds. */
  creation: number;
  participants: GroupParticipant[];
  /** When the name was last set, Unix seconds. */
  subjectTime: number;
  subjectOwner: string;
  /** "" unless the account is an admin of the group. */
  groupInviteLink: string;
  allowParticipantsEditGroupSettings?: boolean;
  allowParticipantsSendMessages?: boolean;
  size?: number;
}
export interface UpdateGroupNameResponse {
  updateGroupName: boolean;
}
export interface UpdateGroupSettingsResponse {
  updateGroupSettings: boolean;
  /** Why not, when updateGroupSettings is false. */
  reason?: string;
}
export interface AddGroupParticipantResponse {
  addParticipant: boolean;
}
export interface RemoveGroupParticipantResponse {
  removeParticipant: boolean;
}
export interface SetGroupAdminResponse {
  setGroupAdmin: boolean;
}
export interface RemoveAdminResponse {
  removeAdmin: boolean;
}
export interface SetGroupPictureResponse {
  setGroupPicture: boolean;
  /** The picture's link; "" when not set. */
  urlAvatar: string | null;
  reason: string;
}
/** `{leaveGroup}`, or `{removeAdmin}` when the account was an admin of the group (as documented). */
export interface LeaveGroupResponse {
  leaveGroup?: boolean;
  removeAdmin?: boolean;
}
// Account, queues and calls
/** The socket to the messenger: `online` while the account works. */
export interface GetStatusInstanceResponse {
  statusInstance: 'online' | 'offline';
}
/** One change of the account's state (getStateInstanceHistory), newest first. */
export interface StateHistoryRecord {
  stateInstance: InstanceState;
  /** UNIX time, seconds. */
  timestamp: number;
  /** The account's chat id (the service names it phoneNumber), e.g. `79001234567@c.us`. */
  phoneNumber: string;
}
export type GetStateInstanceHistoryResponse = StateHistoryRecord[];
export interface RebootResponse {
  isReboot: boolean;
}
export interface LogoutResponse {
  isLogout: boolean;
}
/**
 * qr: `qrCode` (message: a base64 PNG) while the account is not authorized,
 * `alreadyLogged` once it is, `error` when no code can be given.
 */
export interface QrResponse {
  type: 'qrCode' | 'alreadyLogged' | 'error';
  message: string;
}
/** `status: true` with the code to enter on the phone; false (code '') when none can be given. */
export interface GetAuthorizationCodeResponse {
  status: boolean;
  code: string;
}
/** The account on the messenger; avatar, phone and deviceId are empty while it is not authorized. */
export interface GetWaSettingsResponse {
  avatar: string;
  phone: string;
  stateInstance: InstanceState;
  deviceId: string;
}
export interface GetMessagesCountResponse {
  count: number;
}
export interface GetWebhooksCountResponse {
  count: number;
}
/** `isCleared: false`, reason `Too many requests` and the seconds left, within a minute of the last clearing. */
export interface ClearWebhooksQueueResponse {
  isCleared: boolean;
  reason: string;
  leftTime?: number;
}
/** incomingCall's and the call journals' call statuses. */
export type CallStatus = 'offer' | 'pickUp' | 'hangUp' | 'missed' | 'declined';
/** One call of the journals (lastIncomingCalls, lastOutgoingCalls). */
export interface CallRecord {
  type: 'incoming' | 'outgoing';
  /** The call's id. */
  idMessage: string;
  /** UNIX time, seconds. */
  timestamp: number;
  /** The other party's chat id. */
  from: string;
  status: CallStatus;
  isVideo: boolean;
}
export type LastIncomingCallsResponse = CallRecord[];
export type LastOutgoingCallsResponse = CallRecord[];
export interface SetProfilePictureResponse {
  /** Why it was not set; null when it was. */
  reason: string | null;
  urlAvatar: string;
  setProfilePicture: boolean;
}
// Statuses
export interface SendTextStatusResponse {
  idMessage: string;
}
export interface SendVoiceStatusResponse {
  idMessage: string;
}
export interface SendMediaStatusResponse {
  idMessage: string;
}
/** deleteStatus answers 200 with an empty body. */
export type DeleteStatusResponse = void;
/** One viewer of a status: how far it got to them, and when. */
export interface StatusStatisticItem {
  participant: string;
  /** When the status reached this state, seconds since the epoch. */
  timestamp: number;
  status: 'sent' | 'delivered' | 'read';
}
export type GetStatusStatisticResponse = StatusStatisticItem[];
/** A text status's look. */
export interface StatusTextData {
  text: string;
  backgroundColor: string;
  font?: string;
  participants?: string[];
}
/** A status as the status journals list it: text (extendedTextMessage) or media (image, video, audio). */
export interface StatusPost {
  type: 'incoming' | 'outgoing';
  idMessage: string;
  timestamp: number;
  typeMessage: 'extendedTextMessage' | 'imageMessage' | 'videoMessage' | 'audioMessage';
  /** Outgoing: the own chat id; incoming: the sender's. */
  chatId: string;
  textMessage?: string;
  extendedTextMessage?: StatusTextData;
  downloadUrl?: string;
  caption?: string;
  fileName?: string;
  jpegThumbnail?: string;
  mimeType?: string;
  /** Incoming. */
  senderId?: string;
  senderName?: string;
  senderContactName?: string;
  /** Outgoing: `pending` while held in the queue (the instance not authorized). */
  statusMessage?: 'pending' | 'sent' | 'delivered' | 'read';
  sendByApi?: boolean;
  participants?: string[];
  [field: string]: unknown;
}
export type GetIncomingStatusesResponse = StatusPost[];
export type GetOutgoingStatusesResponse = StatusPost[];

/** Error bodies of the service. */
export interface ErrorBody {
  message: string;
}
export interface StatusFalseBody {
  status: false;
  reason: string;
}
export interface RateLimitBody {
  status: false;
  data: { status: 'fail'; reason: 'rate_limit_exceeded'; retryAfter: number };
}

/** Per-call options shared by every transport. */
export interface CallOptions {
  /** Aborts the call (and its retries). */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call, in ms. */
  timeoutMs?: number;
  /**
   * Called before each attempt leaves: after the request was validated and
   * the client's rate limiter let it through, just before the transport
   * sends it. A rejection ends the call with that error, nothing sent. Where
   * a claim that the call is made belongs (the BullMQ item host's write
   * intent): a call still waiting on the limiter has not left.
   */
  beforeSend?: () => Promise<void>;
}

/**
 * The methods of one instance. The got client implements it over HTTP;
 * the local service implements it in-process; actions receive one as `ctx.client`.
 */
export type InstanceApi = {
  [M in ApiMethod]: (request: RequestMap[M], options?: CallOptions) => Promise<ResponseMap[M]>;
};
