/**
 * Push delivery of one instance's notifications while its `webhookUrl` is set:
 * the oldest notification is POSTed (its body as JSON, with
 * `Authorization: Bearer <webhookUrlToken>` when a token is set) until the
 * receiver answers 2xx; only then is it deleted from the queue and the next
 * one pushed. So the order is the queue's, and nothing is lost when either
 * side restarts: the queue is on disk, and a push that was not acknowledged
 * is pushed again (at-least-once, as the real service does).
 *
 * Failures (no answer within the timeout, an answer other than 200) are
 * retried at a fixed interval on the service's clock: the service documents
 * that it waits up to 180 s for an answer, wants HTTP 200, and tries again
 * every 60 s (local.webhook sets both).
 */
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { NotificationQueue, QueuedNotification } from './notification-queue.js';

export interface WebhookTarget {
  webhookUrl: string;
  webhookUrlToken: string;
}

export interface WebhookPusherOptions {
  queue: NotificationQueue;
  clock: Clock;
  logger: Logger;
  /** The current settings (read before every push: a change applies at once). */
  target: () => WebhookTarget;
  /** How long one push waits for the receiver's answer, ms. @default 180000 (the service's figure) */
  timeoutMs?: number;
  /** Time between two tries of a push that failed, ms. @default 60000 (the service's figure) */
  retryIntervalMs?: number;
  /** A scripted outage of the receiver (`startedAt`: when the pusher started): pushes fail without a request. @default never */
  receiverDown?: (startedAt: number) => boolean;
}

/** The service's documented figures. */
export const WEBHOOK_TIMEOUT_MS = 180_000;
export const WEBHOOK_RETRY_INTERVAL_MS = 60_000;

export class WebhookPusher {
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;
  private readonly startedAt: number;
  private nudge: AbortController | undefined;

  constructor(private readonly opts: WebhookPusherOptions) {
    this.startedAt = opts.clock.now();
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Settings changed: re-read them now instead of after the current wait. */
  poke(): void {
    this.nudge?.abort();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stop.signal.aborted) {
      const { webhookUrl, webhookUrlToken } = this.opts.target();
      const head = webhookUrl ? this.opts.queue.head() : undefined;
      if (!head) {
        await this.idle(webhookUrl !== '');
        continue;
      }
      const ok = await this.push(head, webhookUrl, webhookUrlToken);
      if (this.stop.signal.aborted) break;
      if (ok) {
        await this.opts.queue.delete(head.receiptId);
        continue;
      }
      await this.pause(this.opts.retryIntervalMs ?? WEBHOOK_RETRY_INTERVAL_MS);
    }
  }

  /** Waits for a new notification (when a webhook is set) or for a settings change. */
  private async idle(waitForQueue: boolean): Promise<void> {
    this.nudge = new AbortController();
    const signal = AbortSignal.any([this.stop.signal, this.nudge.signal]);
    await (waitForQueue
      ? this.opts.queue.changed(signal)
      : new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true })));
    this.nudge = undefined;
  }

  private async pause(ms: number): Promise<void> {
    this.nudge = new AbortController();
    await this.opts.clock.sleep(ms, AbortSignal.any([this.stop.signal, this.nudge.signal])).catch(() => undefined);
    this.nudge = undefined;
  }

  /** One POST; true when the receiver answered 200 (the service wants 200: another 2xx is no acknowledgement). */
  private async push(n: QueuedNotification, url: string, token: string): Promise<boolean> {
    if (this.opts.receiverDown?.(this.startedAt)) {
      this.opts.logger.warn('local service: webhook receiver down (scripted); trying again later', { receiptId: n.receiptId });
      return false;
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'msgflow-local' };
    if (token) headers.authorization = `Bearer ${token}`;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(n.body),
        redirect: 'manual',
        signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS)]),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status === 200) return true;
      this.opts.logger.warn('local service: webhook push refused; trying again later', { receiptId: n.receiptId, status: res.status });
    } catch (e) {
      if (this.stop.signal.aborted) return false;
      this.opts.logger.warn('local service: webhook push failed; trying again later', { receiptId: n.receiptId, reason: reasonOf(e) });
    }
    return false;
  }
}

/** The error's kind and code, never the URL (it may carry credentials). */
function reasonOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string } }).cause;
  if (cause?.code) return cause.code;
  return e instanceof Error ? e.name : 'error';
}
