/**
 * The simulated messenger network behind every local instance: who has an
 * account, who hides their number, and how fast messages are delivered and
 * read. Shared by all instances of one service, as a real network would be.
 */
import type { NetworkConfig, AccountConfig } from './config.js';
import { phoneOfChatId, chatKind } from '../api/chat-id.js';
import type { StatusMessage } from '../api/types.js';

export class Network {
  readonly name: string;
  readonly deliveredAfterMs: number;
  readonly readAfterMs: number | undefined;
  private readonly byPhone = new Map<number, AccountConfig>();
  private readonly byUsername = new Map<string, AccountConfig>();

  constructor(config: NetworkConfig) {
    this.name = config.name;
    this.deliveredAfterMs = config.deliveredAfterMs;
    this.readAfterMs = config.readAfterMs;
    for (const a of config.accounts) {
      this.byPhone.set(a.phone, a);
      if (a.username) this.byUsername.set(a.username.toLowerCase(), a);
    }
  }

  /** The account on this number, hidden or not. */
  accountByPhone(phone: number): AccountConfig | undefined {
    return this.byPhone.get(phone);
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
    return phone !== undefined && this.byPhone.has(phone);
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
   * delivered: nobody is there to receive it.
   */
  statusOf(chatId: string, sentAtMs: number, now: number): StatusMessage {
    if (chatKind(chatId) === 'personal' && !this.hasAccount(chatId)) return 'sent';
    const age = now - sentAtMs;
    if (this.readAfterMs !== undefined && age >= this.readAfterMs) return 'read';
    if (age >= this.deliveredAfterMs) return 'delivered';
    return 'sent';
  }
}
