/**
 * Poll mode: the client's notification loop (MsgflowClient.notifications:
 * receiveNotification as a long poll, deleteNotification only once the loop
 * body for a notification completed). The body hands the notification to the
 * dispatcher, which resolves once it is recorded: a crash before that leaves
 * it on the service, which delivers it again, and the dispatcher then starts
 * nothing twice.
 */
import type { Logger } from '../../engine/action.js';
import { parseNotification, type Notification } from '../../engine/notify/body.js';
import type { MsgflowClient } from '../../client/client.js';
import type { Clock } from '../../util/clock.js';
import { nestedDeeperThan, tooDeepReason } from '../../util/http-body.js';

export interface PollOptions {
  instance: string;
  client: Pick<MsgflowClient, 'notifications'>;
  handle(instance: string, n: Notification): Promise<unknown>;
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
  /** Seconds the service may hold one receiveNotification (5 to 60). @default 20 */
  receiveTimeout?: number;
}

/** Backoff after a failed receive, delete or handle: the store or the service is down; the notification waits on the service. */
const ERROR_BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000];

/** Runs until `signal` aborts. Never rejects. */
export async function pollNotifications(o: PollOptions): Promise<void> {
  let failures = 0;
  while (!o.signal.aborted) {
    try {
      for await (const got of o.client.notifications({ signal: o.signal, receiveTimeout: o.receiveTimeout ?? 20 })) {
        // A body nested thousands deep could never be recorded: kept, it would be received and fail forever.
        const deep = nestedDeeperThan(got.body);
        // Parsed once here: from now on the notification's fields are read typed.
        const n = deep ? undefined : parseNotification(got.body);
        if (deep) o.logger.warn(`notification ${got.receiptId} of ${o.instance} is ${tooDeepReason()}: deleted without effect`);
        else if (n) await o.handle(o.instance, n);
        else o.logger.warn(`notification ${got.receiptId} of ${o.instance} has no typeWebhook: deleted without effect`);
        failures = 0;
      }
    } catch (e) {
      if (o.signal.aborted) return;
      const wait = ERROR_BACKOFF_MS[Math.min(failures++, ERROR_BACKOFF_MS.length - 1)]!;
      o.logger.warn(`notifications of ${o.instance}: ${e instanceof Error ? e.message : String(e)}; retrying in ${wait / 1000}s`);
      await o.clock.sleep(wait, o.signal).catch(() => undefined);
    }
  }
}
