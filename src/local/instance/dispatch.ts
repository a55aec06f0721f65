/**
 * The methods of one local instance: a request that passed validation in,
 * a status and a JSON body out. One handler per method, so adding a method
 * adds a line to the table, not a branch to a long switch.
 */
import { MsgflowError } from '../../api/errors.js';
import type { ApiMethod } from '../../api/methods.js';
import type { ParsedRequest, QueuedMessage, TypeMessage } from '../../api/types.js';
import type { InstanceState } from '../../api/notifications.js';
import type { Clock } from '../../util/clock.js';
import { typeByFileName } from '../media/detect-type.js';
import type { Network } from '../network.js';
import type { AccountChecker } from './account-check.js';
import type { Chats } from './chats.js';
import { socketStatus, withAccount, type Account } from './account.js';
import type { ContactBook } from './contacts.js';
import type { Groups } from './groups.js';
import type { History } from './history.js';
import type { Notifier } from './notifier.js';
import type { QueueEntry, SendQueue } from './send-queue.js';
import type { SettingsStore } from './settings.js';
import type { StatusBook } from './statuses.js';
import { isSendingKind, showQueuedKind, type Sending } from './sending.js';

/** A method's answer: a status and a JSON body. */
export interface MethodResult {
  status: number;
  body: unknown;
}

/** What the handlers work with: one instance's parts (LocalInstance builds it). */
export interface MethodHost {
  readonly contacts: ContactBook;
  readonly history: History;
  readonly checker: AccountChecker;
  readonly notifier: Notifier;
  readonly settings: SettingsStore;
  readonly sendQueue: SendQueue;
  /** The sending methods beyond sendMessage and sendFileByUrl (sending.ts). */
  readonly sending: Sending;
  // Messages and chats
  /** Contacts and chats as listed, and what the account does to its chats and messages (chats.ts). */
  readonly chats: Chats;
  // Groups
  /** The group chats (groups.ts). */
  readonly groups: Groups;
  // Account, queues and calls
  /** State history, call journals, profile picture (account.ts). */
  readonly account: Account;
  /** Changes the account's state (logout): stateInstanceChanged, recorded in the history. */
  setState(state: InstanceState): Promise<void>;
  /** reboot: `starting` for a moment, then back (a yellowCard account comes back authorized). */
  reboot(): Promise<{ isReboot: boolean }>;
  // Statuses
  /** Posted and received statuses (statuses.ts). */
  readonly statuses: StatusBook;
  readonly clock: Clock;
  readonly network: Network;
  /** The account's state now. */
  state(): InstanceState;
  /** Whether the account works (messages leave the queue, account methods answer). */
  working(): boolean;
  enqueueText(req: ParsedRequest<'sendMessage'>): Promise<{ idMessage: string }>;
  enqueueFile(req: ParsedRequest<'sendFileByUrl'>): Promise<{ idMessage: string }>;
}

type Handler<M extends ApiMethod> = (inst: MethodHost, req: ParsedRequest<M>, signal?: AbortSignal) => unknown;

/**
 * Methods that need the account: while the instance is not authorized they
 * answer 400 with the service's text. Sending is not among them: messages
 * wait in the queue (up to 24 h) until the account works.
 */
const NEEDS_ACCOUNT: ReadonlySet<ApiMethod> = new Set<ApiMethod>(['checkWhatsapp', 'lastIncomingMessages']);

const HANDLERS: { [M in ApiMethod]: Handler<M> } = {
  addContact: (i, r) => i.contacts.add(r),
  editContact: (i, r) => i.contacts.edit(r),
  deleteContact: (i, r) => i.contacts.delete(r),
  getChatHistory: (i, r) => i.history.chatHistory(r.chatId, r.count),
  getMessage: (i, r) => queuedMessage(i, r.idMessage, r.chatId) ?? i.history.getMessage(r.chatId, r.idMessage),
  sendFileByUrl: (i, r) => i.enqueueFile(r),
  lastOutgoingMessages: (i, r) => {
    const since = i.clock.now() - r.minutes * 60_000;
    // Queued messages are listed too, `pending`, newest first like the rest.
    const queued = i.sendQueue
      .pending()
      .filter((e) => e.enqueuedAt >= since)
      .flatMap((e) => pendingMessages(i, e))
      .reverse();
    return [...queued, ...i.history.lastOutgoing(since)];
  },
  checkAccount: (i, r) => {
    if (!i.working()) {
      const e = new MsgflowError('INSTANCE_NOT_READY', { state: i.state() });
      return { status: e.status ?? 200, body: { status: false, reason: e.message } } satisfies MethodResult;
    }
    return i.checker.check(r);
  },
  getStateInstance: (i) => ({ stateInstance: i.state() }),
  sendMessage: (i, r) => i.enqueueText(r),
  checkWhatsapp: (i, r) => {
    // The same rule as checkAccount: a hidden number answers as no account.
    const account = i.network.accountByPhone(r.phoneNumber);
    const exists = account !== undefined && !account.hidden;
    return { existsWhatsapp: exists, chatId: exists ? `${r.phoneNumber}@c.us` : '' };
  },
  getSettings: (i) => i.settings.current(),
  setSettings: async (i, r) => {
    await i.notifier.saveSettings(r);
    i.sendQueue.poke();
    return { saveSettings: true };
  },
  showMessagesQueue: (i) => i.sendQueue.pending().flatMap((e) => showQueued(e) ?? []),
  clearMessagesQueue: async (i) => {
    await i.sendQueue.clear();
    return { isCleared: true };
  },
  lastIncomingMessages: (i, r) => i.history.lastIncoming(i.clock.now() - r.minutes * 60_000),
  receiveNotification: async (i, r, signal) => {
    // One technology at a time, as on the real service: while a webhookUrl is
    // set, notifications are pushed there and a receive finds none.
    if (i.settings.current().webhookUrl !== '') {
      await i.clock.sleep(r.receiveTimeout * 1000, signal).catch(() => undefined);
      return null;
    }
    const n = await i.notifier.queue.receive(r.receiveTimeout * 1000, signal);
    return n && { receiptId: n.receiptId, body: n.body };
  },
  deleteNotification: async (i, r) => ({ result: await i.notifier.queue.delete(r.receiptId) }),
  // Sending
  sendFileByUpload: (i, r) => i.sending.sendFileByUpload(r),
  uploadFile: (i, r) => i.sending.uploadFile(r),
  sendLocation: (i, r) => i.sending.sendLocation(r),
  sendContact: (i, r) => i.sending.sendContact(r),
  sendPoll: (i, r) => i.sending.sendPoll(r),
  sendInteractiveButtons: (i, r) => i.sending.sendInteractiveButtons(r),
  sendInteractiveButtonsReply: (i, r) => i.sending.sendInteractiveButtonsReply(r),
  forwardMessages: (i, r) => i.sending.forwardMessages(r),
  sendTyping: (i, r) => i.sending.sendTyping(r),
  // Messages and chats
  getContacts: (i, r) => i.chats.getContacts(r),
  getContactInfo: (i, r) => i.chats.getContactInfo(r),
  getAvatar: (i, r) => i.chats.getAvatar(r),
  getChats: (i, r) => i.chats.getChats(r),
  downloadFile: (i, r) => i.chats.downloadFile(r),
  deleteMessage: (i, r) => i.chats.deleteMessage(r),
  editMessage: (i, r) => i.chats.editMessage(r),
  readChat: (i, r) => i.chats.readChat(r),
  archiveChat: (i, r) => i.chats.archiveChat(r, true),
  unarchiveChat: (i, r) => i.chats.archiveChat(r, false),
  setDisappearingChat: (i, r) => i.chats.setDisappearingChat(r),
  // Groups
  createGroup: (i, r) => i.groups.create(r),
  getGroupData: (i, r) => i.groups.data(r.groupId),
  updateGroupName: (i, r) => i.groups.rename(r),
  updateGroupSettings: (i, r) => i.groups.updateSettings(r),
  addGroupParticipant: (i, r) => i.groups.addParticipant(r),
  removeGroupParticipant: (i, r) => i.groups.removeParticipant(r),
  setGroupAdmin: (i, r) => i.groups.setAdmin(r),
  removeAdmin: (i, r) => i.groups.removeAdmin(r),
  setGroupPicture: (i, r) => i.groups.setPicture(r),
  leaveGroup: (i, r) => i.groups.leave(r),
  // Account, queues and calls
  getStatusInstance: (i) => ({ statusInstance: socketStatus(i.state()) }),
  getStateInstanceHistory: (i, r) => i.account.stateHistory(r.count),
  reboot: (i) => i.reboot(),
  logout: async (i) => {
    await i.setState('notAuthorized');
    return { isLogout: true };
  },
  qr: (i) => i.account.qr(i.state()),
  getAuthorizationCode: (i) => i.account.authorizationCode(i.state()),
  getWaSettings: (i) => i.account.waSettings(i.state()),
  // What showMessagesQueue lists (a typing notice is not a message).
  getMessagesCount: (i) => ({ count: i.sendQueue.pending().filter((e) => showQueued(e) !== undefined).length }),
  getWebhooksCount: (i) => ({ count: i.notifier.queue.size }),
  clearWebhooksQueue: (i) => i.account.clearWebhooks(() => i.notifier.queue.clear()),
  lastIncomingCalls: (i, r) => withAccount(i, () => i.account.journal('incoming', i.clock.now() - r.minutes * 60_000)),
  lastOutgoingCalls: (i, r) => withAccount(i, () => i.account.journal('outgoing', i.clock.now() - r.minutes * 60_000)),
  setProfilePicture: (i, r) => withAccount(i, () => i.account.setPicture(r)),
  // Statuses
  sendTextStatus: (i, r) => i.statuses.sendText(r),
  sendVoiceStatus: (i, r) => i.statuses.sendVoice(r),
  sendMediaStatus: (i, r) => i.statuses.sendMedia(r),
  deleteStatus: (i, r) => i.statuses.delete(r.idMessage),
  getStatusStatistic: (i, r) => i.statuses.statistic(r.idMessage),
  getIncomingStatuses: (i, r) => i.statuses.incomingSince(i.clock.now() - r.minutes * 60_000),
  getOutgoingStatuses: (i, r) => i.statuses.outgoingSince(i.clock.now() - r.minutes * 60_000),
};

export function dispatch(inst: MethodHost, method: ApiMethod, req: ParsedRequest<ApiMethod>, signal?: AbortSignal): Promise<MethodResult> {
  // Not async: most handlers answer at once (getMessage, a cached
  // checkAccount), and an async function would take two more turns of the
  // microtask queue per call to hand on what they give. A handler that
  // throws rejects, as in an async function.
  let out: unknown;
  try {
    if (NEEDS_ACCOUNT.has(method) && !inst.working()) {
      throw new MsgflowError(inst.state() === 'starting' ? 'INSTANCE_STARTING' : 'ACCOUNT_NOT_AUTHORIZED');
    }
    out = (HANDLERS[method] as Handler<ApiMethod>)(inst, req, signal);
  } catch (e) {
    return Promise.reject(e as Error);
  }
  return out instanceof Promise ? out.then(asResult) : Promise.resolve(asResult(out));
}

/** What a handler gave, as a MethodResult: a plain value is a 200 body. */
function asResult(out: unknown): MethodResult {
  return isResult(out) ? out : { status: 200, body: out };
}

function isResult(v: unknown): v is MethodResult {
  return typeof v === 'object' && v !== null && 'status' in v && 'body' in v && Object.keys(v).length === 2;
}

/** showMessagesQueue's view of an entry; undefined for a typing notice (not a message). */
function showQueued(e: QueueEntry): QueuedMessage | undefined {
  if (isSendingKind(e)) return showQueuedKind(e);
  const body: QueuedMessage['body'] = { chatId: e.chatId };
  if (e.kind === 'text')
    Object.assign(body, { message: e.message ?? '' }, e.linkPreview === undefined ? {} : { linkPreview: e.linkPreview }, e.payload);
  else Object.assign(body, { urlFile: e.urlFile, fileName: e.fileName, caption: e.caption ?? '' });
  if (e.quotedMessageId !== undefined) body.quotedMessageId = e.quotedMessageId;
  return { messageID: e.idMessage, type: e.kind === 'text' ? 'sendMessage' : 'sendFileByUrl', body, statusMessage: 'pending' };
}

/**
 * The type a queued message is shown with: a file's is the one its name gives
 * (entries queued before it was recorded get it from the name now); a file
 * whose name has no known extension shows as a document until it is fetched.
 */
function pendingType(e: QueueEntry): TypeMessage {
  if (e.kind === 'text') return 'textMessage';
  return e.typeMessage ?? typeByFileName(e.fileName ?? '')?.typeMessage ?? 'documentMessage';
}

/** A queued message as getMessage and lastOutgoingMessages show it: `pending`. */
function pendingMessage(e: QueueEntry) {
  const m = {
    type: 'outgoing' as const,
    idMessage: e.idMessage,
    timestamp: Math.floor(e.enqueuedAt / 1000),
    typeMessage: pendingType(e),
    chatId: e.chatId,
    statusMessage: 'pending' as const,
    sendByApi: true,
  };
  if (e.kind === 'text') return { ...m, textMessage: e.message ?? '' };
  // An upload is stored already: its link is known while it waits.
  return {
    ...m,
    fileName: e.fileName ?? '',
    caption: e.caption ?? '',
    ...(e.fileId === undefined ? {} : { downloadUrl: e.urlFile ?? '' }),
  };
}

/** The messages a queued entry will be, `pending`. */
function pendingMessages(i: MethodHost, e: QueueEntry) {
  return isSendingKind(e) ? i.sending.pendingMessages(e) : [pendingMessage(e)];
}

function queuedMessage(i: MethodHost, idMessage: string, chatId: string) {
  const e = i.sendQueue.pendingWith(idMessage);
  return e && e.chatId === chatId ? pendingMessages(i, e).find((m) => m.idMessage === idMessage) : undefined;
}
