/**
 * Human handover: while an operator talks to a chat, the bot keeps quiet in
 * it. A handover is ONE record per (instance, chat) in the shared namespace
 * `handover` (engine/shared.ts HANDOVER_NS), key `${identity}:${chatId}`:
 * begun when the operator writes from the phone (the notification consumer,
 * `by: 'operator'`), by a dialog state or the `chat.handover` action, by a
 * command or the API; ended by `end()` (the operator's resume command,
 * `chat.release`, `msgflow handovers release`, the dashboard) or by its
 * `until` passing. Expiry is read, never swept: an expired record is simply
 * not active, and is deleted the next time someone looks at it.
 *
 * Every read and write touches one record; only `list()` scans the namespace.
 */
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import { HANDOVER_NS, sharedRecords, type SharedRecords } from '../shared.js';

/** A chat handed to a human: the bot does not answer it until `until` (or until ended). */
export interface Handover {
  /** Config name of the instance. */
  instance: string;
  chatId: string;
  /** When it began, ms (engine clock). */
  since: number;
  /** When it ends by itself, ms; absent: until ended. */
  until?: number;
  /** Who began it: the operator writing from the phone, a dialog state, a command, the API (CLI, dashboard, action). */
  by: 'operator' | 'dialog' | 'command' | 'api';
  /** Why, for lists and skipped-run reasons. */
  reason?: string;
}

/** What {@link Handovers} needs. */
export interface HandoversOptions {
  store: Pick<EngineStore, 'kv'>;
  clock: Pick<Clock, 'now'>;
  /**
   * The instance's identity (records are keyed by it, never by the config name).
   * @default the config name itself
   */
  identityFor?: (instance: string) => string;
}

/** The chats handed over to a human, durable in the engine store. */
export class Handovers {
  private readonly records: SharedRecords<Handover>;
  private readonly identityFor: (instance: string) => string;

  constructor(private readonly opts: HandoversOptions) {
    this.records = sharedRecords(opts.store, HANDOVER_NS);
    this.identityFor = opts.identityFor ?? ((name) => name);
  }

  private key(instance: string, chatId: string): string {
    return `${this.identityFor(instance)}:${chatId}`;
  }

  /**
   * Hands the chat over (again): `forMs` from now, or until ended when not
   * given. A handover already active is replaced (its `since` kept): the
   * operator writing again extends the quiet.
   */
  async begin(instance: string, chatId: string, o: { by: Handover['by']; reason?: string; forMs?: number }): Promise<Handover> {
    if (o.forMs !== undefined && !(Number.isFinite(o.forMs) && o.forMs > 0))
      throw new RangeError(`handover of ${chatId}: forMs must be a positive number of milliseconds, got ${o.forMs}`);
    const now = this.opts.clock.now();
    const cur = await this.active(instance, chatId);
    const h: Handover = {
      instance,
      chatId,
      since: cur?.since ?? now,
      by: o.by,
      ...(o.forMs === undefined ? {} : { until: now + o.forMs }),
      ...(o.reason === undefined ? {} : { reason: o.reason }),
    };
    await this.records.set(this.key(instance, chatId), h);
    return h;
  }

  /** The bot may answer the chat again. Nothing happens when it was not handed over. */
  async end(instance: string, chatId: string): Promise<void> {
    await this.records.delete(this.key(instance, chatId));
  }

  /** The chat's handover in force now, if any (an expired one reads as none, and is deleted). */
  async active(instance: string, chatId: string): Promise<Handover | undefined> {
    const key = this.key(instance, chatId);
    const h = await this.records.get(key);
    if (!h) return undefined;
    if (h.until !== undefined && h.until <= this.opts.clock.now()) {
      await this.records.delete(key);
      return undefined;
    }
    return h;
  }

  /** Every handover in force, oldest first. */
  async list(): Promise<Handover[]> {
    const now = this.opts.clock.now();
    return (await this.records.entries())
      .map(([, h]) => h)
      .filter((h) => h.until === undefined || h.until > now)
      .sort((a, b) => a.since - b.since || a.chatId.localeCompare(b.chatId));
  }
}
