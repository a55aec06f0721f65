/**
 * Push delivery of one instance's notifications while its `webhookUrl` is set:
 * the oldest notification is POSTed (its body as JSON, with
 * `Authorization: Bearer <webhookUrlToken>` when a token is set) until the
 * receiver answers 2xx; only then is it deleted from the queue and the next
 * one pushed. So the order is the queue's, and nothing is lost when either
 * side restarts: the queue is on disk, and a push that was not acknowledged
 * is pushed again (at-least-once, as the real service does).
 *
 * Failures (no answer, non-2xx, timeout) are retried with exponential backoff
 * (util/backoff.ts), from 1 s up to 60 s between tries, on the service's clock.
 */
import { backoffDelay } from '../../util/backoff.js';
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
  /** One push's deadline, ms. @default 10000 */
  timeoutMs?: number;
  /** @default 1000 */
  backoffBaseMs?: number;
  /** @default 60000 */
  backoffMaxMs?: number;
}

export class WebhookPusher {
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;
  private nudge: AbortController | undefined;

  constructor(private readonly opts: WebhookPusherOptions) {}

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
    let failures = 0;
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
        failures = 0;
        await this.opts.queue.delete(head.receiptId);
        continue;
      }
      failures++;
      const base = this.opts.backoffBaseMs ?? 1000;
      await this.pause(backoffDelay({ baseMs: base, maxMs: this.opts.backoffMaxMs ?? 60_000, jitter: 'equal' }, failures));
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

  /** One POST; true when the receiver answered 2xx. */
  private async push(n: QueuedNotification, url: string, token: string): Promise<boolean> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'msgflow-local' };
    if (token) headers.authorization = `Bearer ${token}`;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(n.body),
        redirect: 'manual',
        signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.opts.timeoutMs ?? 10_000)]),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return true;
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
