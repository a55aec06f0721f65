/**
 * The notification queue of one instance (notifications.jsonl, append-only).
 *
 * Records: `add` (written before anything may see the notification), `del`
 * (deleteNotification, or a webhook push acknowledged with 2xx). Replaying
 * them after a crash gives back exactly the notifications not yet deleted, in
 * the order they were produced (FIFO). A notification older than the
 * retention (24 h on the service's clock) is dropped when it reaches the head.
 *
 * An `add` may carry a `key` (e.g. `status:<idMessage>:delivered`): a second
 * add with a key already produced (even if since deleted) is ignored, so a
 * producer that re-derives its notifications after a restart never repeats
 * one. Keys are remembered for the retention period.
 */
import type { NotificationBody, ReceivedNotification } from '../../api/notifications.js';
import type { Clock } from '../../util/clock.js';
import { AppendLog } from '../persist/append-log.js';

export interface QueuedNotification extends ReceivedNotification {
  /** When it was produced, ms on the service's clock. */
  at: number;
}

type NotificationRecord =
  | { op: 'add'; receiptId: number; at: number; key?: string; body: NotificationBody }
  | { op: 'del'; receiptId: number }
  | { op: 'key'; key: string; at: number };

export interface NotificationQueueOptions {
  file: string;
  /** `file` as named in errors (the instance id hidden). */
  shown: string;
  clock: Clock;
  /** How long a notification waits to be received, ms. @default 86400000 */
  retentionMs?: number;
}

export const NOTIFICATION_RETENTION_MS = 24 * 3600_000;

export class NotificationQueue {
  private readonly log: AppendLog<NotificationRecord>;
  /** Live notifications in FIFO order (a Map keeps insertion order). */
  private readonly live = new Map<number, QueuedNotification>();
  /** Produced keys and when. */
  private readonly keys = new Map<string, number>();
  private nextReceiptId = 1;
  private readonly waiters = new Set<() => void>();
  private readonly retentionMs: number;

  constructor(private readonly opts: NotificationQueueOptions) {
    this.log = new AppendLog<NotificationRecord>(opts.file, opts.shown);
    this.retentionMs = opts.retentionMs ?? NOTIFICATION_RETENTION_MS;
  }

  async load(): Promise<void> {
    const records = (await this.log.read()) ?? [];
    for (const r of records) {
      if (r.op === 'add') {
        this.live.set(r.receiptId, { receiptId: r.receiptId, body: r.body, at: r.at });
        if (r.key !== undefined) this.keys.set(r.key, r.at);
        this.nextReceiptId = Math.max(this.nextReceiptId, r.receiptId + 1);
      } else if (r.op === 'del') {
        this.live.delete(r.receiptId);
        this.nextReceiptId = Math.max(this.nextReceiptId, r.receiptId + 1);
      } else {
        this.keys.set(r.key, r.at);
      }
    }
    this.expire();
    // Compaction keeps the file proportional to what is still live (and the
    // keys still remembered), not to everything ever produced. Done at load,
    // before any append can race it.
    const needed = this.live.size + this.keys.size + 1;
    if (records.length > 1000 && records.length > 4 * needed) await this.log.write(this.snapshot());
  }

  /**
   * Persists a notification and wakes a waiting receiver; resolves with its
   * receiptId once it is in the file, or undefined when `key` was produced before.
   */
  async add(body: NotificationBody, key?: string): Promise<number | undefined> {
    if (key !== undefined && this.keys.has(key)) return undefined;
    const receiptId = this.nextReceiptId++;
    const at = this.opts.clock.now();
    if (key !== undefined) this.keys.set(key, at);
    await this.log.append(key === undefined ? { op: 'add', receiptId, at, body } : { op: 'add', receiptId, at, key, body });
    this.live.set(receiptId, { receiptId, body, at });
    for (const wake of [...this.waiters]) wake();
    return receiptId;
  }

  /** Records `key` as decided without producing a notification (its type is switched off). */
  async mark(key: string): Promise<void> {
    if (this.keys.has(key)) return;
    const at = this.opts.clock.now();
    this.keys.set(key, at);
    await this.log.append({ op: 'key', key, at });
  }

  /** Whether `key` was produced (within the retention period). */
  produced(key: string): boolean {
    return this.keys.has(key);
  }

  /** The oldest notification not deleted and not expired. */
  head(): QueuedNotification | undefined {
    this.expire();
    return this.live.values().next().value;
  }

  /**
   * The oldest notification, waiting up to `timeoutMs` (service clock) for
   * one to arrive; null after the timeout, when `signal` aborts, or when the
   * queue is closed.
   */
  async receive(timeoutMs: number, signal?: AbortSignal): Promise<QueuedNotification | null> {
    const first = this.head();
    if (first || timeoutMs <= 0 || signal?.aborted) return first ?? null;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const wake = () => stop.abort();
    this.waiters.add(wake);
    try {
      await this.opts.clock.sleep(timeoutMs, stop.signal).catch(() => undefined);
    } finally {
      this.waiters.delete(wake);
      signal?.removeEventListener('abort', onAbort);
    }
    return signal?.aborted ? null : (this.head() ?? null);
  }

  /** Resolves the next time a notification is added (or the queue closes). */
  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Removes a notification for good; false when none has that receiptId. */
  async delete(receiptId: number): Promise<boolean> {
    if (!this.live.has(receiptId)) return false;
    await this.log.append({ op: 'del', receiptId });
    this.live.delete(receiptId);
    return true;
  }

  /** Removes every waiting notification (clearWebhooksQueue); resolves with how many went. */
  async clear(): Promise<number> {
    const ids = [...this.live.keys()];
    if (ids.length === 0) return 0;
    await this.log.append(...ids.map((receiptId) => ({ op: 'del' as const, receiptId })));
    for (const id of ids) this.live.delete(id);
    return ids.length;
  }

  get size(): number {
    this.expire();
    return this.live.size;
  }

  /** Ends every waiting receive (with null). */
  close(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Drops notifications and keys older than the retention period. */
  private expire(): void {
    const cutoff = this.opts.clock.now() - this.retentionMs;
    for (const [id, n] of this.live) {
      if (n.at >= cutoff) break;
      this.live.delete(id);
    }
    for (const [key, at] of this.keys) {
      if (at >= cutoff) break;
      this.keys.delete(key);
    }
  }

  private snapshot(): NotificationRecord[] {
    const out: NotificationRecord[] = [];
    // The highest receiptId survives compaction, so ids are never reused.
    if (this.live.size === 0) out.push({ op: 'del', receiptId: this.nextReceiptId - 1 });
    for (const n of this.live.values()) out.push({ op: 'add', receiptId: n.receiptId, at: n.at, body: n.body });
    for (const [key, at] of this.keys) out.push({ op: 'key', key, at });
    return out;
  }
}
