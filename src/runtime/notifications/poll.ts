/**
 * Poll mode: receiveNotification in a loop (a long poll: the service holds
 * the request up to receiveTimeout), each notification handed to the
 * dispatcher and deleted only once the dispatcher has recorded it. A crash
 * in between leaves it on the service, which delivers it again; the
 * dispatcher then recognises it and starts nothing twice.
 */
import type { InstanceApi } from '../../api/types.js';
import type { Logger } from '../../engine/action.js';
import { isNotificationLike, type NotificationLike } from '../../engine/notify/index.js';
import type { Clock } from '../../util/clock.js';

export interface PollOptions {
  instance: string;
  client: InstanceApi;
  handle(instance: string, body: NotificationLike): Promise<unknown>;
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
  /** Seconds the service may hold one receiveNotification. @default 20 */
  receiveTimeout?: number;
}

/** Backoff after a failed receive or handle: the store or the service is down; the notification waits on the service. */
const ERROR_BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000];

/** Runs until `signal` aborts. Never rejects. */
export async function pollNotifications(o: PollOptions): Promise<void> {
  let failures = 0;
  while (!o.signal.aborted) {
    try {
      const got = await o.client.receiveNotification({ receiveTimeout: o.receiveTimeout ?? 20 }, { signal: o.signal });
      if (got === null) continue;
      if (isNotificationLike(got.body)) await o.handle(o.instance, got.body);
      else o.logger.warn(`notification ${got.receiptId} of ${o.instance} has no typeWebhook: deleted without effect`);
      await o.client.deleteNotification({ receiptId: got.receiptId }, { signal: o.signal });
      failures = 0;
    } catch (e) {
      if (o.signal.aborted) return;
      const wait = ERROR_BACKOFF_MS[Math.min(failures++, ERROR_BACKOFF_MS.length - 1)]!;
      o.logger.warn(`notifications of ${o.instance}: ${e instanceof Error ? e.message : String(e)}; retrying in ${wait / 1000}s`);
      await o.clock.sleep(wait, o.signal).catch(() => undefined);
    }
  }
}
