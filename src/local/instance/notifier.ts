/**
 * Everything an instance tells the outside on its own: its notification
 * queue (receiveNotification/deleteNotification), its settings (which
 * notification types are produced, where they are pushed), the webhook
 * pusher and the status watcher. The instance reports events (a message
 * released, failed, received; a state change); the notifier turns each into
 * the notification its settings ask for.
 *
 * Each event has a key (e.g. `status:<idMessage>:read`). A key is recorded
 * whether or not its type is switched on, so that re-deriving events after a
 * restart (see {@link Notifier.recover}) neither repeats a notification nor
 * produces an old one because a switch was turned on since.
 */
import path from 'node:path';
import type {
  IncomingCall,
  InstanceData,
  InstanceState,
  NotificationBody,
  NotificationMessageData,
  NotificationType,
  OutgoingStatus,
} from '../../api/notifications.js';
import type { Message } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { blockBody, callBody, incomingBody, outgoingBody, quotaBody, stateBody, statusBody, type Origin } from '../notify/bodies.js';
import { NotificationQueue } from '../notify/notification-queue.js';
import { StatusWatcher, type TrackedMessage } from '../notify/status-watcher.js';
import { WebhookPusher } from '../notify/webhook-pusher.js';
import { SettingsStore, type SettingsInput } from './settings.js';
import type { QuotaData } from './failures.js';

export interface NotifierOptions {
  dir: string;
  /** `dir` as named in errors. */
  shown: string;
  clock: Clock;
  logger: Logger;
  instanceData: InstanceData;
  settings: SettingsStore;
  /** A sent message's status now: sent, delivered, read, or noAccount. */
  statusOf: (m: TrackedMessage) => OutgoingStatus;
  /** When the status after `status` is due; undefined when it is the last. */
  nextChangeAt: (m: TrackedMessage, status: OutgoingStatus) => number | undefined;
  /** Webhook delivery timing. @default the service's figures (WebhookPusher) */
  webhook?: { timeoutMs: number; retryIntervalMs: number };
  /** Whether the receiver is scripted down, `sinceStartMs` after the notifier started. @default never */
  receiverDown?: (sinceStartMs: number) => boolean;
}

export class Notifier {
  readonly queue: NotificationQueue;
  private readonly pusher: WebhookPusher;
  private readonly watcher: StatusWatcher;

  constructor(private readonly opts: NotifierOptions) {
    this.queue = new NotificationQueue({
      file: path.join(opts.dir, 'notifications.jsonl'),
      shown: path.join(opts.shown, 'notifications.jsonl'),
      clock: opts.clock,
    });
    this.pusher = new WebhookPusher({
      queue: this.queue,
      clock: opts.clock,
      logger: opts.logger,
      target: () => opts.settings.current(),
      ...opts.webhook,
      receiverDown: opts.receiverDown && ((startedAt) => opts.receiverDown!(opts.clock.now() - startedAt)),
    });
    this.watcher = new StatusWatcher({
      clock: opts.clock,
      statusOf: opts.statusOf,
      nextChangeAt: opts.nextChangeAt,
      emit: (m, status) =>
        this.produce('outgoingMessageStatus', `status:${m.idMessage}:${status}`, () => statusBody({ ...m, status }, this.origin()), {
          status,
        }),
      onError: (e) => opts.logger.error('local service: a status notification could not be written', { reason: String(e) }),
    });
  }

  async open(): Promise<void> {
    await this.queue.load();
  }

  /** Starts pushing and watching statuses (after {@link recover}). */
  start(): void {
    this.pusher.start();
    this.watcher.start();
  }

  async close(): Promise<void> {
    this.queue.close();
    await Promise.all([this.pusher.close(), this.watcher.close()]);
  }

  async saveSettings(input: SettingsInput): Promise<void> {
    await this.opts.settings.save(input);
    this.pusher.poke();
  }

  /**
   * Re-derives the events of the last 24 h that may have been cut short by a
   * crash: API messages sent (and their statuses since) and queued messages
   * that failed. Keys already recorded produce nothing.
   */
  async recover(
    sent: readonly { message: Message; sentAtMs: number }[],
    failed: readonly { idMessage: string; chatId: string; reason: string }[],
  ): Promise<void> {
    for (const s of sent) await this.messageSent(s.message, s.sentAtMs);
    for (const f of failed) await this.messageFailed(f.idMessage, f.chatId, f.reason);
  }

  /** A message of ours left the send queue: outgoingAPIMessageReceived, then its statuses as they come. */
  async messageSent(m: Message, sentAtMs: number): Promise<void> {
    await this.produce('outgoingAPIMessageReceived', `api:${m.idMessage}`, () =>
      outgoingBody('outgoingAPIMessageReceived', m, this.origin()),
    );
    this.watcher.track({ idMessage: m.idMessage, chatId: m.chatId, sentAtMs });
  }

  async messageFailed(idMessage: string, chatId: string, reason: string): Promise<void> {
    await this.produce(
      'outgoingMessageStatus',
      `status:${idMessage}:failed`,
      () => statusBody({ chatId, idMessage, status: 'failed', description: reason }, this.origin()),
      { status: 'failed' },
    );
  }

  /** A message arrived (or was sent from the phone: outgoingMessageReceived). */
  async messageArrived(m: Message): Promise<void> {
    const kind = { typeMessage: m.typeMessage };
    if (m.type === 'incoming') {
      await this.produce('incomingMessageReceived', `in:${m.idMessage}`, () => incomingBody(m, this.origin()), kind);
    } else {
      const build = () => outgoingBody('outgoingMessageReceived', m, this.origin());
      await this.produce('outgoingMessageReceived', `out:${m.idMessage}`, build, kind);
    }
  }

  /**
   * A message of ours edited or deleted through the API (editMessage,
   * deleteMessage): outgoingAPIMessageReceived with that messageData. Its
   * kind (`editedMessage`, `deletedMessage`) may need a switch of its own.
   */
  async messageChanged(c: { idMessage: string; chatId: string; messageData: NotificationMessageData }): Promise<void> {
    const build = () => {
      const m: Message = { type: 'outgoing', idMessage: c.idMessage, timestamp: 0, typeMessage: 'textMessage', chatId: c.chatId };
      return { ...outgoingBody('outgoingAPIMessageReceived', m, this.origin()), messageData: c.messageData };
    };
    await this.produce('outgoingAPIMessageReceived', `change:${c.idMessage}`, build, { typeMessage: c.messageData.typeMessage });
  }

  /**
   * Admin: a notification as given (a flow test's status or API-message
   * event), stamped as this instance's, now; queued when its type's switch is
   * on. Resolves with whether it was queued.
   */
  async relay(body: { typeWebhook: NotificationType } & Record<string, unknown>): Promise<boolean> {
    const status = typeof body.status === 'string' ? body.status : undefined;
    if (!this.opts.settings.produces(body.typeWebhook, { status })) return false;
    const { instanceData, timestamp } = { instanceData: this.opts.instanceData, timestamp: Math.floor(this.opts.clock.now() / 1000) };
    await this.queue.add({ ...body, instanceData, timestamp } as unknown as NotificationBody);
    return true;
  }

  /** A call to the account: incomingCall, once per call and status. */
  async callArrived(c: { from: string; status: IncomingCall['status']; idMessage: string }): Promise<boolean> {
    const key = `call:${c.idMessage}:${c.status}`;
    await this.produce('incomingCall', key, () => callBody(c, this.origin()));
    return this.opts.settings.produces('incomingCall');
  }

  /** The plan's chat quota refused a send: quotaExceeded (not keyed: each refusal is reported). */
  async quotaExceeded(quotaData: QuotaData): Promise<void> {
    if (this.opts.settings.produces('quotaExceeded')) await this.queue.add(quotaBody(quotaData, this.origin()));
  }

  /** A contact blocked the account: incomingBlock (not keyed: a contact can block again after unblocking). Answers whether it was queued. */
  async blockedBy(chatId: string): Promise<boolean> {
    if (!this.opts.settings.produces('incomingBlock')) return false;
    await this.queue.add(blockBody(chatId, this.origin()));
    return true;
  }

  async stateChanged(state: InstanceState): Promise<void> {
    // Not keyed: the same state can be entered again later.
    if (this.opts.settings.produces('stateInstanceChanged')) await this.queue.add(stateBody(state, this.origin()));
  }

  private origin(): Origin {
    return { instanceData: this.opts.instanceData, now: this.opts.clock.now() };
  }

  /** `detail`: a message notification's kind (some need a switch of their own), a status notification's status (some cannot be switched off). */
  private async produce(
    type: NotificationType,
    key: string,
    build: () => NotificationBody,
    detail?: { typeMessage?: string; status?: string },
  ): Promise<void> {
    if (this.queue.produced(key)) return;
    if (this.opts.settings.produces(type, detail)) await this.queue.add(build(), key);
    else await this.queue.mark(key);
  }
}
