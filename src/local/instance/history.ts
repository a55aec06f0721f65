/**
 * Message history of one instance: one append-only JSON Lines file per chat
 * (chats/<chatId>.jsonl) plus an in-memory index built at start. Storing a
 * message is one appended line, so it costs the same with 100 or 100,000
 * messages stored; reading a chat's newest N is a slice of its array.
 *
 * Stored messages never change: the outgoing status is derived from
 * `sentAtMs` and the clock (see Network.statusOf), and the sender's phonebook
 * name is looked up when read.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { MsgflowError } from '../../api/errors.js';
import type { Message, StatusMessage } from '../../api/types.js';
import { AppendLog } from '../persist/append-log.js';

export interface StoredMessage {
  message: Message;
  /** When it was sent or received, ms since the epoch. */
  sentAtMs: number;
  /** A seeded outgoing message may fix its status instead of following the network's timings. */
  fixedStatus?: StatusMessage;
}

export interface MessageView {
  statusOf(chatId: string, sentAtMs: number): StatusMessage;
  phonebookName(chatId: string): string;
  /** Groups: a status an outgoing message gets for good when it is stored (notInGroup: the account had left the group). */
  statusWhenSent?(message: Message): StatusMessage | undefined;
  /** Shows what happened to a message since it was stored (an edit, a deletion: chats.ts). */
  amend?(m: Message): void;
  /** Whether a stored message shows in the journals yet (journal lag). @default always */
  inJournal?(r: StoredMessage): boolean;
}

export class History {
  private readonly chats = new Map<string, StoredMessage[]>();
  /** Chats holding a message that is not `notInGroup` (see showsMembership): kept as messages are indexed, so a send asks in O(1). */
  private readonly member = new Set<string>();
  private readonly logs = new Map<string, AppendLog<StoredMessage>>();
  private readonly byId = new Map<string, StoredMessage>();
  private readonly outgoing: StoredMessage[] = [];
  private readonly incoming: StoredMessage[] = [];
  private readonly chatsDir: string;
  private readonly shownDir: string;

  /** @param shownDir `dir` as named in errors (the instance id hidden). */
  constructor(
    dir: string,
    private readonly view: MessageView,
    shownDir = dir,
  ) {
    this.chatsDir = path.join(dir, 'chats');
    this.shownDir = path.join(shownDir, 'chats');
  }

  async load(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.chatsDir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const name of names) {
      if (!name.endsWith('.jsonl')) continue;
      const log = new AppendLog<StoredMessage>(path.join(this.chatsDir, name), path.join(this.shownDir, name));
      const records = (await log.read()) ?? [];
      for (const r of records) this.index(r);
      if (records[0]) this.logs.set(records[0].message.chatId, log);
    }
  }

  get size(): number {
    return this.byId.size;
  }

  has(idMessage: string): boolean {
    return this.byId.has(idMessage);
  }

  hasChat(chatId: string): boolean {
    return this.chats.has(chatId);
  }

  /**
   * Whether the chat has a message that shows the account is in it: any but
   * the sends that went nowhere (notInGroup). Kept as messages are indexed,
   * so a chat of many notInGroup sends costs no scan per send.
   */
  showsMembership(chatId: string): boolean {
    return this.member.has(chatId);
  }

  /** Appends to the chat's file; resolves once written. */
  async append(...records: StoredMessage[]): Promise<void> {
    const byChat = new Map<string, StoredMessage[]>();
    for (const r of records) {
      if (r.message.type === 'outgoing' && r.fixedStatus === undefined) {
        const fixed = this.view.statusWhenSent?.(r.message);
        if (fixed !== undefined) r.fixedStatus = fixed;
      }
      const list = byChat.get(r.message.chatId) ?? [];
      list.push(r);
      byChat.set(r.message.chatId, list);
    }
    await Promise.all([...byChat].map(([chatId, list]) => this.logOf(chatId).append(...list)));
    // Indexed after the write: a message is visible only once it is durable.
    for (const r of records) this.index(r);
  }

  /** Newest first. An unknown chat has an empty history. */
  chatHistory(chatId: string, count: number): Message[] {
    const list = this.chats.get(chatId);
    if (!list) return [];
    const out: Message[] = [];
    for (let i = list.length - 1; i >= 0 && out.length < count; i--) if (this.shown(list[i]!)) out.push(this.render(list[i]!));
    return out;
  }

  /**
   * @throws MsgflowError CHAT_NOT_FOUND when the chat has no messages,
   *   MESSAGE_NOT_FOUND when the id is not in that chat (e.g. still queued).
   */
  getMessage(chatId: string, idMessage: string): Message {
    if (!this.chats.has(chatId)) throw new MsgflowError('CHAT_NOT_FOUND', { chatId });
    const r = this.byId.get(idMessage);
    if (!r || r.message.chatId !== chatId || !this.shown(r)) throw new MsgflowError('MESSAGE_NOT_FOUND', { idMessage });
    return this.render(r);
  }

  /** Outgoing messages sent at or after `sinceMs`, newest first. */
  lastOutgoing(sinceMs: number): Message[] {
    return this.newestSince(this.outgoing, sinceMs);
  }

  /** Incoming messages received at or after `sinceMs`, newest first. */
  lastIncoming(sinceMs: number): Message[] {
    return this.newestSince(this.incoming, sinceMs);
  }

  private newestSince(list: readonly StoredMessage[], sinceMs: number): Message[] {
    const out: Message[] = [];
    for (let i = list.length - 1; i >= 0; i--) {
      const r = list[i]!;
      if (r.sentAtMs >= sinceMs && this.shown(r)) out.push(this.render(r));
    }
    return out;
  }

  /** Stored outgoing messages sent through the API at or after `sinceMs`, oldest first. */
  apiOutgoingSince(sinceMs: number): StoredMessage[] {
    // Once per start: the index is in load order (chat by chat), so it is filtered, then sorted.
    // A seeded message's fixed status was never sent through the API; a notInGroup one was (Groups).
    return this.outgoing
      .filter((r) => r.sentAtMs >= sinceMs && r.message.sendByApi && (!r.fixedStatus || r.fixedStatus === 'notInGroup'))
      .sort((a, b) => a.sentAtMs - b.sentAtMs);
  }

  /** A stored message as the journals show it, journal lag aside (what its notification carries). */
  rendered(r: StoredMessage): Message {
    return this.render(r);
  }

  /** Chats with at least one outgoing message (once per start: the chat quota's count). */
  chatsWithOutgoing(): string[] {
    return [...this.chats].filter(([, list]) => list.some((r) => r.message.type === 'outgoing')).map(([chatId]) => chatId);
  }

  private shown(r: StoredMessage): boolean {
    return this.view.inJournal?.(r) ?? true;
  }

  /** The chat's first outgoing message. */
  firstOutgoing(chatId: string): StoredMessage | undefined {
    return this.chats.get(chatId)?.find((r) => r.message.type === 'outgoing');
  }

  /** The chat's newest stored message that `match` accepts (as stored: its status is not rendered). */
  findLast(chatId: string, match: (m: Message) => boolean): Message | undefined {
    const list = this.chats.get(chatId) ?? [];
    for (let i = list.length - 1; i >= 0; i--) if (match(list[i]!.message)) return list[i]!.message;
    return undefined;
  }

  /** The chat's stored outgoing messages of one kind, oldest first (the replier's recovery). */
  outgoingOfKind(chatId: string, typeMessage: string): StoredMessage[] {
    return (this.chats.get(chatId) ?? []).filter((r) => r.message.type === 'outgoing' && r.message.typeMessage === typeMessage);
  }

  /** Every chat with a message, with its newest message's time (ms); in no particular order. */
  chatsWithActivity(): { chatId: string; lastAtMs: number }[] {
    return [...this.chats].map(([chatId, list]) => ({ chatId, lastAtMs: list[list.length - 1]!.sentAtMs }));
  }

  /** The stored record of a message (for quoting). */
  find(idMessage: string): StoredMessage | undefined {
    return this.byId.get(idMessage);
  }

  private logOf(chatId: string): AppendLog<StoredMessage> {
    let log = this.logs.get(chatId);
    if (!log) {
      // chatId passed isChatId validation (digits, '-', '@', '.', letters), so this is a safe file name.
      const name = `${encodeURIComponent(chatId)}.jsonl`;
      log = new AppendLog<StoredMessage>(path.join(this.chatsDir, name), path.join(this.shownDir, name));
      this.logs.set(chatId, log);
    }
    return log;
  }

  private index(r: StoredMessage): void {
    if (this.byId.has(r.message.idMessage)) return;
    let list = this.chats.get(r.message.chatId);
    if (!list) {
      list = [];
      this.chats.set(r.message.chatId, list);
    }
    list.push(r);
    if (r.fixedStatus !== 'notInGroup') this.member.add(r.message.chatId);
    this.byId.set(r.message.idMessage, r);
    if (r.message.type === 'outgoing') this.outgoing.push(r);
    else this.incoming.push(r);
  }

  /** A fresh copy with the fields that depend on time or the phonebook filled in. */
  private render(r: StoredMessage): Message {
    // Object.assign, not a spread: V8 copies a message parsed from its log
    // line with a spread about 6x slower (its clone fast path does not take
    // such objects), and getMessage renders one per call. Same keys, same order.
    const m: Message = Object.assign({}, r.message);
    if (m.type === 'outgoing') {
      m.statusMessage = r.fixedStatus ?? this.view.statusOf(m.chatId, r.sentAtMs);
    } else if (m.senderContactName === undefined) {
      m.senderContactName = m.senderId ? this.view.phonebookName(m.senderId) : '';
    }
    this.view.amend?.(m);
    return m;
  }
}
