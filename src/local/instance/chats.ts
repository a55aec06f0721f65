/**
 * Messages and chats of one instance: the account's contacts and chats as
 * the service lists them (getContacts, getChats, getContactInfo, getAvatar),
 * a file message's link (downloadFile), and what the account does to its
 * chats and messages (archiveChat, unarchiveChat, setDisappearingChat,
 * readChat, editMessage, deleteMessage).
 *
 * What changes is kept in one append-only log, chat-state.jsonl, one line
 * per change (a chat archived, a message edited...), folded into maps at
 * start: a change costs one appended line whatever is stored. Stored
 * messages never change (history.ts): journals show an edit or a deletion
 * through {@link ChatStore.amend}, applied when a message is read.
 */
import path from 'node:path';
import { MsgflowError } from '../../api/errors.js';
import { chatKind, phoneOfChatId } from '../../api/chat-id.js';
import type { NotificationMessageData } from '../../api/notifications.js';
import type {
  ChatEntry,
  ContactEntry,
  GetAvatarResponse,
  GetContactInfoResponse,
  Message,
  ParsedRequest,
  SetDisappearingChatResponse,
  TypeMessage,
} from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { Network } from '../network.js';
import { newMessageId } from '../ids.js';
import { AppendLog } from '../persist/append-log.js';
import type { ContactBook } from './contacts.js';
import type { History } from './history.js';

/** One line of chat-state.jsonl. `at`: ms since the epoch. */
type ChatChange =
  | { k: 'archive'; chatId: string; archive: boolean; at: number }
  | { k: 'ephemeral'; chatId: string; expiration: number; at: number }
  | { k: 'read'; chatId: string; idMessage?: string; at: number }
  | { k: 'edit'; chatId: string; idMessage: string; editId: string; text: string; at: number }
  | { k: 'delete'; chatId: string; idMessage: string; deleteId: string; onlySender: boolean; at: number };

interface ChatState {
  archive: boolean;
  /** Seconds; 0: off. */
  expiration: number;
  /** ms of the last setDisappearingChat; 0: never. */
  expirationAt: number;
}

interface MessageChange {
  edit?: { editId: string; text: string };
  deleted?: boolean;
}

/** The service's limit: "There is a 15 minute time limit for editing messages". */
export const EDIT_WINDOW_MS = 15 * 60_000;

/** Kinds whose text editMessage may replace: "Only the message text can be edited". */
const TEXT_KINDS: ReadonlySet<TypeMessage> = new Set<TypeMessage>(['textMessage', 'extendedTextMessage', 'quotedMessage']);

const NO_CHANGE: ChatState = { archive: false, expiration: 0, expirationAt: 0 };

/** The chats' and messages' changes, persisted. */
export class ChatStore {
  private readonly chats = new Map<string, ChatState>();
  private readonly messages = new Map<string, MessageChange>();

  private constructor(private readonly log: AppendLog<ChatChange>) {}

  /** Opens dir/chat-state.jsonl (`shown` names the dir in errors). */
  static async open(dir: string, shown: string): Promise<ChatStore> {
    const store = new ChatStore(new AppendLog<ChatChange>(path.join(dir, 'chat-state.jsonl'), path.join(shown, 'chat-state.jsonl')));
    for (const c of (await store.log.read()) ?? []) store.apply(c);
    return store;
  }

  chat(chatId: string): ChatState {
    return this.chats.get(chatId) ?? NO_CHANGE;
  }

  change(idMessage: string): MessageChange | undefined {
    return this.messages.get(idMessage);
  }

  /** Written, then applied: a change is visible only once it is durable. */
  async record(c: ChatChange): Promise<void> {
    await this.log.append(c);
    this.apply(c);
  }

  /** A message as journals show it: edited (the new text, isEdited) or deleted (isDeleted). */
  amend(m: Message): void {
    const c = this.messages.get(m.idMessage);
    if (!c) return;
    if (c.edit) {
      m.isEdited = true;
      m.editedMessageId = c.edit.editId;
      m.textMessage = c.edit.text;
      if (m.extendedTextMessageData) m.extendedTextMessageData = { ...m.extendedTextMessageData, text: c.edit.text };
    }
    if (c.deleted) m.isDeleted = true;
  }

  private apply(c: ChatChange): void {
    if (c.k === 'archive') this.chats.set(c.chatId, { ...this.chat(c.chatId), archive: c.archive });
    else if (c.k === 'ephemeral') this.chats.set(c.chatId, { ...this.chat(c.chatId), expiration: c.expiration, expirationAt: c.at });
    else if (c.k === 'edit')
      this.messages.set(c.idMessage, { ...this.messages.get(c.idMessage), edit: { editId: c.editId, text: c.text } });
    else if (c.k === 'delete') this.messages.set(c.idMessage, { ...this.messages.get(c.idMessage), deleted: true });
    // `read` leaves nothing to show: journals do not carry an incoming message's read state.
  }
}

export interface ChatsDeps {
  store: ChatStore;
  history: History;
  contacts: ContactBook;
  network: Network;
  clock: Clock;
  /** An edit or a deletion made through the API: its outgoingAPIMessageReceived notification. */
  notify(change: { idMessage: string; chatId: string; messageData: NotificationMessageData }): Promise<void>;
}

/** The handlers of the "Messages and chats" methods. */
export class Chats {
  constructor(private readonly deps: ChatsDeps) {}

  getContacts(r: ParsedRequest<'getContacts'>): ContactEntry[] {
    const { contacts, history } = this.deps;
    const byId = new Map<string, number>();
    // The contact list first (saved people), then every chat the account has had.
    for (const c of contacts.contacts()) byId.set(c.chatId, c.updatedAt);
    for (const a of history.chatsWithActivity()) byId.set(a.chatId, Math.max(a.lastAtMs, byId.get(a.chatId) ?? 0));
    const out = [...byId]
      .sort((a, b) => b[1] - a[1])
      .map(([id]) => this.contactEntry(id))
      .filter((c) => r.group === undefined || (c.type === 'group') === r.group);
    return r.count === undefined ? out : out.slice(0, r.count);
  }

  getChats(r: ParsedRequest<'getChats'>): ChatEntry[] {
    const list = this.deps.history.chatsWithActivity().sort((a, b) => b.lastAtMs - a.lastAtMs);
    return (r.count === undefined ? list : list.slice(0, r.count)).map(({ chatId }) => {
      const s = this.deps.store.chat(chatId);
      return {
        archive: s.archive,
        id: chatId,
        ephemeralExpiration: s.expiration,
        ephemeralSettingTimestamp: Math.floor(s.expirationAt / 1000),
        name: this.nameOf(chatId),
        type: chatKind(chatId) === 'group' ? 'group' : 'user',
      };
    });
  }

  /** @throws MsgflowError NOT_ON_MESSENGER when the number has no account. */
  getContactInfo(r: ParsedRequest<'getContactInfo'>): GetContactInfoResponse {
    const { network, contacts, store } = this.deps;
    if (!network.hasAccount(r.chatId)) throw new MsgflowError('NOT_ON_MESSENGER', { chatId: r.chatId, messenger: network.name });
    const s = store.chat(r.chatId);
    return {
      avatar: '',
      name: network.nameOf(r.chatId) ?? '',
      contactName: contacts.phonebookName(r.chatId),
      email: '',
      category: '',
      description: '',
      products: [],
      chatId: r.chatId,
      lastSeen: null,
      isArchive: s.archive,
      isDisappearing: s.expiration > 0,
      isMute: false,
      messageExpiration: s.expiration,
      muteExpiration: null,
      isBusiness: false,
    };
  }

  /**
   * The network has no pictures: urlAvatar is '' (as for an account without
   * one). A hidden number's avatar is not available, as privacy settings make it.
   */
  getAvatar(r: ParsedRequest<'getAvatar'>): GetAvatarResponse {
    if (chatKind(r.chatId) === 'group') return { urlAvatar: '', available: true };
    const phone = phoneOfChatId(r.chatId);
    const account = phone === undefined ? undefined : this.deps.network.accountByPhone(phone);
    return { urlAvatar: '', available: account !== undefined && !account.hidden, existsWhatsapp: account !== undefined };
  }

  /**
   * @throws MsgflowError CHAT_NOT_FOUND, MESSAGE_NOT_FOUND; VALIDATION_FAILED
   *   when the message carries no file
   */
  downloadFile(r: ParsedRequest<'downloadFile'>): { downloadUrl: string } {
    const m = this.deps.history.getMessage(r.chatId, r.idMessage);
    if (!m.downloadUrl)
      throw new MsgflowError('VALIDATION_FAILED', { details: `message ${r.idMessage} has no file (it is a ${m.typeMessage})` });
    return { downloadUrl: m.downloadUrl };
  }

  /**
   * Archives (or unarchives) a chat that has an incoming message, with the
   * service's errors for one without and for one already so.
   * @throws MsgflowError ARCHIVE_CHAT_FAILED
   */
  async archiveChat(r: ParsedRequest<'archiveChat'>, archive: boolean): Promise<undefined> {
    const method = archive ? 'ArchiveChat' : 'UnarchiveChat';
    if (!this.deps.history.findLast(r.chatId, (m) => m.type === 'incoming')) {
      throw new MsgflowError('ARCHIVE_CHAT_FAILED', { method, reason: 'cannot archive chat cause last message not found in chat' });
    }
    if (this.deps.store.chat(r.chatId).archive === archive) {
      throw new MsgflowError('ARCHIVE_CHAT_FAILED', { method, reason: `chat with id ${r.chatId} already archive=${archive}` });
    }
    await this.deps.store.record({ k: 'archive', chatId: r.chatId, archive, at: this.deps.clock.now() });
    return undefined;
  }

  async setDisappearingChat(r: ParsedRequest<'setDisappearingChat'>): Promise<SetDisappearingChatResponse> {
    await this.deps.store.record({ k: 'ephemeral', chatId: r.chatId, expiration: r.ephemeralExpiration, at: this.deps.clock.now() });
    return { chatId: r.chatId, disappearingMessagesInChat: r.ephemeralExpiration > 0, ephemeralExpiration: r.ephemeralExpiration };
  }

  /** @throws MsgflowError CHAT_NOT_FOUND, MESSAGE_NOT_FOUND (idMessage not in the chat) */
  async readChat(r: ParsedRequest<'readChat'>): Promise<{ setRead: boolean }> {
    this.knownChat(r.chatId);
    if (r.idMessage !== undefined) this.deps.history.getMessage(r.chatId, r.idMessage);
    const c: ChatChange = { k: 'read', chatId: r.chatId, at: this.deps.clock.now() };
    if (r.idMessage !== undefined) c.idMessage = r.idMessage;
    await this.deps.store.record(c);
    return { setRead: true };
  }

  /**
   * Replaces an outgoing text's text. As on the service, an edit asked for
   * more than 15 minutes after sending is answered 200 but not made: the
   * journal keeps the old text and no notification is produced.
   * @throws MsgflowError CHAT_NOT_FOUND, MESSAGE_NOT_FOUND; VALIDATION_FAILED
   *   for an incoming message, one not of a text kind, or one deleted
   */
  async editMessage(r: ParsedRequest<'editMessage'>): Promise<{ idMessage: string }> {
    const { history, store, clock } = this.deps;
    const m = history.getMessage(r.chatId, r.idMessage);
    const refuse = (why: string) => new MsgflowError('VALIDATION_FAILED', { details: `message ${r.idMessage} cannot be edited: ${why}` });
    if (m.type !== 'outgoing') throw refuse('only messages of this account can be edited');
    if (!TEXT_KINDS.has(history.find(r.idMessage)!.message.typeMessage)) throw refuse(`only text can be edited, it is a ${m.typeMessage}`);
    if (m.isDeleted) throw refuse('it was deleted');
    const editId = newMessageId();
    if (clock.now() - history.find(r.idMessage)!.sentAtMs > EDIT_WINDOW_MS) return { idMessage: editId };
    await store.record({ k: 'edit', chatId: r.chatId, idMessage: r.idMessage, editId, text: r.message, at: clock.now() });
    await this.deps.notify({
      idMessage: editId,
      chatId: r.chatId,
      messageData: { typeMessage: 'editedMessage', editedMessageData: { textMessage: r.message, stanzaId: r.idMessage } },
    });
    return { idMessage: editId };
  }

  /**
   * Deletes a message, for everyone or (onlySenderDelete) for this account;
   * journals show it isDeleted. Deleting it again changes nothing.
   * @throws MsgflowError CHAT_NOT_FOUND, MESSAGE_NOT_FOUND
   */
  async deleteMessage(r: ParsedRequest<'deleteMessage'>): Promise<undefined> {
    const { history, store, clock } = this.deps;
    history.getMessage(r.chatId, r.idMessage);
    if (store.change(r.idMessage)?.deleted) return undefined;
    const deleteId = newMessageId();
    await store.record({
      k: 'delete',
      chatId: r.chatId,
      idMessage: r.idMessage,
      deleteId,
      onlySender: r.onlySenderDelete,
      at: clock.now(),
    });
    await this.deps.notify({
      idMessage: deleteId,
      chatId: r.chatId,
      messageData: { typeMessage: 'deletedMessage', deletedMessageData: { stanzaId: r.idMessage } },
    });
    return undefined;
  }

  /** @throws MsgflowError CHAT_NOT_FOUND when the account has no message in the chat */
  private knownChat(chatId: string): void {
    if (!this.deps.history.hasChat(chatId)) throw new MsgflowError('CHAT_NOT_FOUND', { chatId });
  }

  private contactEntry(id: string): ContactEntry {
    return {
      id,
      name: this.deps.network.nameOf(id) ?? '',
      contactName: this.deps.contacts.phonebookName(id),
      type: chatKind(id) === 'group' ? 'group' : 'user',
    };
  }

  /** A chat's name: the phonebook's, else the account's own. */
  private nameOf(chatId: string): string {
    return this.deps.contacts.phonebookName(chatId) || (this.deps.network.nameOf(chatId) ?? '');
  }
}
