/**
 * The simulated messenger network behind every local instance: who has an
 * account, who hides their number, and how fast messages are delivered and
 * read. Shared by all instances of one service, as a real network would be.
 */
import type { NetworkConfig, AccountConfig, PopulationConfig } from './config.js';
import { phoneOfChatId, chatKind } from '../api/chat-id.js';

export class Network {
  readonly name: string;
  readonly deliveredAfterMs: number;
  readonly readAfterMs: number | undefined;
  /** How long a message sent through the API takes to appear in the journals. */
  readonly journalLagMs: number;
  /** How long a urlFile fetch waits before it starts (a slow file host). */
  readonly fileHostDelayMs: number;
  private readonly byPhone = new Map<number, AccountConfig>();
  private readonly byUsername = new Map<string, AccountConfig>();
  /** Longest prefix first, so the most specific entry decides. */
  private readonly population: PopulationConfig[];

  constructor(config: NetworkConfig) {
    this.name = config.name;
    this.deliveredAfterMs = config.deliveredAfterMs;
    this.readAfterMs = config.readAfterMs;
    this.journalLagMs = config.journalLagMs;
    this.fileHostDelayMs = config.fileHostDelayMs;
    this.population = [...config.population].sort((a, b) => b.prefix.length - a.prefix.length);
    for (const a of config.accounts) {
      this.byPhone.set(a.phone, a);
      if (a.username) this.byUsername.set(a.username.toLowerCase(), a);
    }
  }

  /** The account on this number, hidden or not: an explicit one, else one of the population. */
  accountByPhone(phone: number): AccountConfig | undefined {
    return (
      this.byPhone.get(phone) ??
      (this.inPopulation(phone) ? { phone, hidden: false, replies: [], votes: [], presses: [], writes: [] } : undefined)
    );
  }

  /**
   * Whether the population gives this number an account: the longest
   * matching prefix's `share` against a hash of the number's digits, so the
   * answer is the same in every run and process.
   */
  inPopulation(phone: number): boolean {
    if (this.population.length === 0) return false;
    const digits = String(phone);
    const entry = this.population.find((p) => digits.startsWith(p.prefix));
    return entry !== undefined && numberHash(digits) < entry.share;
  }

  accountByUsername(username: string): AccountConfig | undefined {
    return this.byUsername.get(username.toLowerCase());
  }

  /**
   * Whether a personal chat id belongs to an account. A hidden number is still
   * on the messenger (privacy only affects checkAccount), so contacts work.
   */
  hasAccount(chatId: string): boolean {
    const phone = phoneOfChatId(chatId);
    return phone !== undefined && (this.byPhone.has(phone) || this.inPopulation(phone));
  }

  /** One kind of script of the account behind a personal chat id (empty when it has none). */
  private scripted<K extends 'replies' | 'votes' | 'presses' | 'writes'>(chatId: string, kind: K): AccountConfig[K] {
    const phone = phoneOfChatId(chatId);
    return (phone === undefined ? undefined : this.byPhone.get(phone)?.[kind]) ?? [];
  }

  /** The scripted replies of the account behind a personal chat id (empty when it has none). */
  repliesOf(chatId: string): AccountConfig['replies'] {
    return this.scripted(chatId, 'replies');
  }

  /** How the account behind a personal chat id votes on polls (empty when it does not). */
  votesOf(chatId: string): AccountConfig['votes'] {
    return this.scripted(chatId, 'votes');
  }

  /** The buttons the account behind a personal chat id presses on reply-button messages (empty when none). */
  pressesOf(chatId: string): AccountConfig['presses'] {
    return this.scripted(chatId, 'presses');
  }

  /** The messages the account behind a personal chat id writes first, on its own (empty when none). */
  writesOf(chatId: string): AccountConfig['writes'] {
    return this.scripted(chatId, 'writes');
  }

  /** Personal chat ids of the accounts that reply, vote, press buttons or write first. */
  replyingChats(): string[] {
    return [...this.byPhone.values()]
      .filter((a) => a.replies.length > 0 || a.votes.length > 0 || a.presses.length > 0 || a.writes.length > 0)
      .map((a) => `${a.phone}@c.us`);
  }

  /** Display name of the account behind a personal chat id, if any. */
  nameOf(chatId: string): string | undefined {
    const phone = phoneOfChatId(chatId);
    return phone === undefined ? undefined : this.byPhone.get(phone)?.name;
  }

  /**
   * Status of an outgoing message, derived from when it was sent and the
   * clock rather than from timers, so it is right after a restart and under an
   * injected clock. A message to a personal chat with no account is never
   * delivered: its status is noAccount, and stays so (the service's journals
   * say so too).
   */
  statusOf(chatId: string, sentAtMs: number, now: number): 'sent' | 'delivered' | 'read' | 'noAccount' {
    if (chatKind(chatId) === 'personal' && !this.hasAccount(chatId)) return 'noAccount';
    const age = now - sentAtMs;
    if (this.readAfterMs !== undefined && age >= this.readAfterMs) return 'read';
    if (age >= this.deliveredAfterMs) return 'delivered';
    return 'sent';
  }
}

/**
 * A number's digits hashed to [0, 1): FNV-1a over the digits, then
 * murmur3's finaliser so neighbouring numbers land far apart. Fixed forever:
 * changing it would change who has an account in every saved test setup.
 */
export function numberHash(digits: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < digits.length; i++) {
    h ^= digits.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}
