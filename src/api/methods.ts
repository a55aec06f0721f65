/**
 * The catalogue of the API methods: how each is called and how it may be
 * retried. Client, local service and built-in actions all read this one table.
 */
export const API_METHODS = [
  'addContact',
  'editContact',
  'deleteContact',
  'getChatHistory',
  'getMessage',
  'sendFileByUrl',
  'lastOutgoingMessages',
  'checkAccount',
  'getStateInstance',
  'sendMessage',
  'checkWhatsapp',
  'getSettings',
  'setSettings',
  'showMessagesQueue',
  'clearMessagesQueue',
  'lastIncomingMessages',
  'receiveNotification',
  'deleteNotification',
  // Sending
  'sendFileByUpload',
  'uploadFile',
  'sendLocation',
  'sendContact',
  'sendPoll',
  'sendInteractiveButtons',
  'sendInteractiveButtonsReply',
  'forwardMessages',
  'sendTyping',
  // Messages and chats
  'getContacts',
  'getContactInfo',
  'getAvatar',
  'getChats',
  'downloadFile',
  'deleteMessage',
  'editMessage',
  'readChat',
  'archiveChat',
  'unarchiveChat',
  'setDisappearingChat',
  // Groups
  'createGroup',
  'getGroupData',
  'updateGroupName',
  'updateGroupSettings',
  'addGroupParticipant',
  'removeGroupParticipant',
  'setGroupAdmin',
  'removeAdmin',
  'setGroupPicture',
  'leaveGroup',
  // Account, queues and calls
  'getStatusInstance',
  'getStateInstanceHistory',
  'reboot',
  'logout',
  'qr',
  'getAuthorizationCode',
  'getWaSettings',
  'getMessagesCount',
  'getWebhooksCount',
  'clearWebhooksQueue',
  'lastIncomingCalls',
  'lastOutgoingCalls',
  'setProfilePicture',
  // Statuses
  'sendTextStatus',
  'sendVoiceStatus',
  'sendMediaStatus',
  'deleteStatus',
  'getStatusStatistic',
  'getIncomingStatuses',
  'getOutgoingStatuses',
] as const;

export type ApiMethod = (typeof API_METHODS)[number];

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface MethodSpec {
  readonly name: ApiMethod;
  /** GET carries the request in the query string, POST in a JSON body, DELETE in the path. */
  readonly httpMethod: HttpMethod;
  /**
   * Request fields that travel as path segments after the token, in this
   * order: `DELETE …/deleteNotification/{token}/{receiptId}`. @default []
   */
  readonly pathParams?: readonly string[];
  /**
   * The request field (seconds) for which the service may hold the answer
   * (a long poll): the client's per-call timeout is extended beyond it.
   */
  readonly longPollSeconds?: string;
  /**
   * Whether repeating the call has the same effect as making it once. A
   * non-idempotent call that may have reached the server is never retried:
   * a second sendFileByUrl would send the file twice.
   */
  readonly idempotent: boolean;
  /**
   * Whether the call changes anything on the instance (a contact, a message).
   * A dry run never makes a writing call.
   */
  readonly writes: boolean;
  /** The service's published requests/second for this method. */
  readonly defaultRatePerSecond: number;
  /**
   * How a POST carries its request: `json` (a JSON body), `multipart`
   * (multipart/form-data: a `file` part and text fields, sendFileByUpload),
   * or `binary` (the file itself as the body, its name in the `GA-Filename`
   * header: uploadFile). @default 'json'
   */
  readonly requestBody?: 'json' | 'multipart' | 'binary';
  /** The service answers a success with an empty body (sendTyping): the client resolves to undefined. @default false */
  readonly emptyAnswer?: boolean;
}

export const METHOD_SPECS: Readonly<Record<ApiMethod, MethodSpec>> = Object.freeze({
  addContact: { name: 'addContact', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 10 },
  editContact: { name: 'editContact', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  deleteContact: { name: 'deleteContact', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  getChatHistory: { name: 'getChatHistory', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getMessage: { name: 'getMessage', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  sendFileByUrl: { name: 'sendFileByUrl', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  lastOutgoingMessages: { name: 'lastOutgoingMessages', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  checkAccount: { name: 'checkAccount', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  getStateInstance: { name: 'getStateInstance', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  sendMessage: { name: 'sendMessage', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  checkWhatsapp: { name: 'checkWhatsapp', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  getSettings: { name: 'getSettings', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  setSettings: { name: 'setSettings', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  showMessagesQueue: { name: 'showMessagesQueue', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // Not published; the same as showMessagesQueue, its companion.
  clearMessagesQueue: { name: 'clearMessagesQueue', httpMethod: 'GET', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  // Not published; the same as lastOutgoingMessages, its twin.
  lastIncomingMessages: { name: 'lastIncomingMessages', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // Receiving does not consume (only deleteNotification does): repeating it is safe.
  receiveNotification: {
    name: 'receiveNotification',
    httpMethod: 'GET',
    writes: false,
    idempotent: true,
    defaultRatePerSecond: 100,
    longPollSeconds: 'receiveTimeout',
  },
  // Deleting twice leaves the same queue (the second answers {result: false}).
  deleteNotification: {
    name: 'deleteNotification',
    httpMethod: 'DELETE',
    writes: true,
    idempotent: true,
    defaultRatePerSecond: 100,
    pathParams: ['receiptId'],
  },
  // Sending. sendFileByUpload's 5/s is the 2023 table's; the methods added to
  // the service since (uploadFile, sendPoll, the interactive buttons,
  // sendTyping) have no published rate and take their siblings'.
  sendFileByUpload: {
    name: 'sendFileByUpload',
    httpMethod: 'POST',
    writes: true,
    idempotent: false,
    defaultRatePerSecond: 5,
    requestBody: 'multipart',
  },
  // Uploading twice stores two copies and answers two links: no harm done.
  uploadFile: { name: 'uploadFile', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 5, requestBody: 'binary' },
  sendLocation: { name: 'sendLocation', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendContact: { name: 'sendContact', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendPoll: { name: 'sendPoll', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendInteractiveButtons: { name: 'sendInteractiveButtons', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendInteractiveButtonsReply: {
    name: 'sendInteractiveButtonsReply',
    httpMethod: 'POST',
    writes: true,
    idempotent: false,
    defaultRatePerSecond: 50,
  },
  forwardMessages: { name: 'forwardMessages', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  // A second typing notice only shows "typing..." longer: safe to repeat.
  sendTyping: { name: 'sendTyping', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 50, emptyAnswer: true },
  // Messages and chats. The service publishes no rate for these; they take
  // their siblings' (journal reads 1/s like getChatHistory, the rest 10/s like getMessage).
  getContacts: { name: 'getContacts', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getContactInfo: { name: 'getContactInfo', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  getAvatar: { name: 'getAvatar', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  getChats: { name: 'getChats', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  downloadFile: { name: 'downloadFile', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  // A second delete of the same message changes nothing (and notifies nothing).
  deleteMessage: {
    name: 'deleteMessage',
    httpMethod: 'POST',
    writes: true,
    idempotent: true,
    defaultRatePerSecond: 10,
    emptyAnswer: true,
  },
  // Each edit is an event of its own (a new id, a notification): not repeated blindly.
  editMessage: { name: 'editMessage', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 10 },
  readChat: { name: 'readChat', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  // Archiving an archived chat is refused ("already archive=true"): a retry
  // after a lost answer would report a failure for work done, so none is made.
  archiveChat: { name: 'archiveChat', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 10, emptyAnswer: true },
  unarchiveChat: {
    name: 'unarchiveChat',
    httpMethod: 'POST',
    writes: true,
    idempotent: false,
    defaultRatePerSecond: 10,
    emptyAnswer: true,
  },
  setDisappearingChat: { name: 'setDisappearingChat', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  // Groups have no published rate: a group changes as fast as a person
  // changes it, so 1/s. createGroup's "one group every 5 minutes" is advice
  // against a ban, not a limit the service enforces (see docs/local-service.md).
  createGroup: { name: 'createGroup', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 1 },
  getGroupData: { name: 'getGroupData', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  updateGroupName: { name: 'updateGroupName', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  updateGroupSettings: { name: 'updateGroupSettings', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  // Adding someone already in the group answers false and changes nothing: safe to repeat.
  addGroupParticipant: { name: 'addGroupParticipant', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  removeGroupParticipant: { name: 'removeGroupParticipant', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  setGroupAdmin: { name: 'setGroupAdmin', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  removeAdmin: { name: 'removeAdmin', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  setGroupPicture: {
    name: 'setGroupPicture',
    httpMethod: 'POST',
    writes: true,
    idempotent: true,
    defaultRatePerSecond: 1,
    requestBody: 'multipart',
  },
  leaveGroup: { name: 'leaveGroup', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  // Account, queues and calls
  // The 2023 rate table: account methods 1/s, getStatusInstance and getWaSettings 1/s;
  // the queue and call journal methods added since take their siblings' (showMessagesQueue's, lastIncomingMessages').
  getStatusInstance: { name: 'getStatusInstance', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getStateInstanceHistory: { name: 'getStateInstanceHistory', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // A second reboot only restarts again: safe to repeat.
  reboot: { name: 'reboot', httpMethod: 'GET', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  logout: { name: 'logout', httpMethod: 'GET', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  qr: { name: 'qr', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // Each call makes a new code (the last one counts): repeating it is harmless.
  getAuthorizationCode: { name: 'getAuthorizationCode', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  getWaSettings: { name: 'getWaSettings', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getMessagesCount: { name: 'getMessagesCount', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getWebhooksCount: { name: 'getWebhooksCount', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // The service allows one clearing a minute (a second answers isCleared: false with leftTime).
  clearWebhooksQueue: { name: 'clearWebhooksQueue', httpMethod: 'DELETE', writes: true, idempotent: true, defaultRatePerSecond: 1 },
  lastIncomingCalls: { name: 'lastIncomingCalls', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  lastOutgoingCalls: { name: 'lastOutgoingCalls', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  // Setting the same picture twice leaves the same picture.
  setProfilePicture: {
    name: 'setProfilePicture',
    httpMethod: 'POST',
    writes: true,
    idempotent: true,
    defaultRatePerSecond: 1,
    requestBody: 'multipart',
  },
  // Statuses. The status methods (beta on the service) have no published
  // rate: a status takes the sending methods' 50/s, the journals their 1/s
  // siblings' (lastOutgoingMessages), the statistic getMessage's 10/s.
  sendTextStatus: { name: 'sendTextStatus', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendVoiceStatus: { name: 'sendVoiceStatus', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  sendMediaStatus: { name: 'sendMediaStatus', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  // A second delete finds nothing (400) but leaves the same state: safe to repeat.
  deleteStatus: { name: 'deleteStatus', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 50, emptyAnswer: true },
  getStatusStatistic: { name: 'getStatusStatistic', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  getIncomingStatuses: { name: 'getIncomingStatuses', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getOutgoingStatuses: { name: 'getOutgoingStatuses', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
});

/** Methods whose request has no field at all: the request object may be left out. */
export const NO_PARAMETER_METHODS: ReadonlySet<ApiMethod> = new Set<ApiMethod>([
  'getStateInstance',
  'getSettings',
  'showMessagesQueue',
  'clearMessagesQueue',
  // Account, queues and calls
  'getStatusInstance',
  'reboot',
  'logout',
  'qr',
  'getWaSettings',
  'getMessagesCount',
  'getWebhooksCount',
  'clearWebhooksQueue',
]);

/**
 * The methods that send a message to a chat (`chatId`): what counts against
 * the service's chat quota, and what a yellowCard or a blocked account holds.
 */
export const MESSAGE_SENDING_METHODS: ReadonlySet<ApiMethod> = new Set<ApiMethod>([
  'sendMessage',
  'sendFileByUrl',
  'sendFileByUpload',
  'sendLocation',
  'sendContact',
  'sendPoll',
  'sendInteractiveButtons',
  'sendInteractiveButtonsReply',
  'forwardMessages',
]);

export function isApiMethod(name: string): name is ApiMethod {
  return (API_METHODS as readonly string[]).includes(name);
}

/** Per-method requests/second; 0 means unlimited. */
export type RateLimits = Partial<Record<ApiMethod, number>>;

export function defaultRateLimits(): Record<ApiMethod, number> {
  const out = {} as Record<ApiMethod, number>;
  for (const m of API_METHODS) out[m] = METHOD_SPECS[m].defaultRatePerSecond;
  return out;
}
