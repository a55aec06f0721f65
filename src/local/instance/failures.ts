/**
 * Failures scripted on one local instance (`local.instances[].failures`): the
 * account turning yellowCard/blocked/notAuthorized at a time or after N
 * sends, the Developer plan's chat quota (HTTP 466 and a quotaExceeded
 * notification), and a webhook receiver down for a while. Times count on the
 * service's clock from the instance's start.
 */
import { MESSAGE_SENDING_METHODS, type ApiMethod } from '../../api/methods.js';
import type { InstanceState } from '../../api/notifications.js';
import type { Clock } from '../../util/clock.js';
import type { FailuresConfig } from '../config.js';

/** The documented body of a 466 for the chat quota (and the quotaData of its quotaExceeded notification). */
export interface QuotaData {
  method: 'correspondents';
  used: number;
  total: number;
  status: 'CORRESPONDENTS_QUOTA_EXCEEDED';
  description: string;
}

export interface FailuresHost {
  clock: Clock;
  /** Aborted when the instance closes. */
  stopping: AbortSignal;
  setState(state: InstanceState): Promise<void>;
  quotaExceeded(data: QuotaData): Promise<void>;
  /** Chats the instance has sent to already (read once, at start). */
  chatsMessaged(): Iterable<string>;
  onError(e: unknown): void;
}

export class ScriptedFailures {
  private readonly startedAt: number;
  private sends = 0;
  private chats: Set<string> | undefined;

  constructor(
    private readonly script: FailuresConfig,
    private readonly host: FailuresHost,
  ) {
    this.startedAt = host.clock.now();
  }

  /** Schedules the timed state changes. */
  start(): void {
    for (const s of this.script.states) {
      if (s.afterMs === undefined) continue;
      const at = this.startedAt + s.afterMs;
      void this.host.clock
        .sleep(Math.max(0, at - this.host.clock.now()), this.host.stopping)
        .then(() => this.host.setState(s.state))
        .catch((e: unknown) => {
          if (!this.host.stopping.aborted) this.host.onError(e);
        });
    }
  }

  /** A message left the send queue: the state changes scripted after N sends. */
  async messageSent(): Promise<void> {
    this.sends++;
    for (const s of this.script.states) if (s.afterSends === this.sends) await this.host.setState(s.state);
  }

  /**
   * The 466 answer of a send to a chat beyond the quota (and its notification), or undefined when the
   * send may go. A chat within the quota is counted from its first send.
   */
  quotaAnswer(method: ApiMethod, req: unknown): Promise<{ status: number; body: unknown }> | undefined {
    const quota = this.script.newChatsQuota;
    // Decided without a promise: nearly every call passes, and this runs on every request.
    if (quota === undefined || !MESSAGE_SENDING_METHODS.has(method)) return undefined;
    const chatId = (req as { chatId?: unknown } | null)?.chatId;
    if (typeof chatId !== 'string') return undefined;
    this.chats ??= new Set(this.host.chatsMessaged());
    if (this.chats.has(chatId)) return undefined;
    if (this.chats.size < quota) {
      this.chats.add(chatId);
      return undefined;
    }
    return this.quotaRefusal(method, quota);
  }

  /** The 466 of a send to one chat too many, after its quotaExceeded notification. */
  private async quotaRefusal(method: ApiMethod, quota: number): Promise<{ status: number; body: unknown }> {
    const chats = this.chats!;
    const allowed = [...chats].join(', ');
    const data: QuotaData = {
      method: 'correspondents',
      used: chats.size,
      total: quota,
      status: 'CORRESPONDENTS_QUOTA_EXCEEDED',
      description: `Monthly quota has been exceeded. You can only send or receive messages from following chats: ${allowed}. Please go to your personal account and change the tariff to business https://console.green-api.com`,
    };
    await this.host.quotaExceeded(data);
    const invokeStatus = { method: method.toLowerCase(), used: this.sends, total: 0, status: 'QUOTE_ALLOWED' };
    return { status: 466, body: { invokeStatus, correspondentsStatus: data } };
  }
}

/** Whether the webhook receiver is scripted down `sinceStartMs` after the instance started. */
export function webhookDownAt(script: FailuresConfig, sinceStartMs: number): boolean {
  return script.webhookDown.some((w) => sinceStartMs >= w.afterMs && sinceStartMs < w.afterMs + w.forMs);
}
