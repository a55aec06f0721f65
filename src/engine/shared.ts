/**
 * The shared namespaces: durable state kept across runs and flows
 * (`ctx.shared(ns)`), each declared once, here, with the type of its records,
 * so that the action that writes a namespace, the consumer that fills it, the
 * dashboard and `msgflow pauses` that read it name the same thing: a rename
 * is one edit, never a silent split of the data. Their store namespace (the
 * `shared:` prefix) is made by {@link sharedKvName} alone.
 *
 * Per-instance data is keyed by the instance's identity, inside the
 * namespace (`<identity>:<key>`) or in the namespace's name (the families
 * below), never by its config name.
 */
import type { DurableState, EngineStore } from '../store/types.js';
import type { ConsumerRecord, IncomingChatRecord, OptOutRecord, OutgoingStatusRecord } from './notify/records.js';
import type { PauseRecord } from './run/pauses.js';
import type { IdleTimer, Session } from './conversation/session.js';
import type { Handover } from './conversation/handover.js';

/** A namespace of `ctx.shared()` and the type of its records. */
export interface SharedNamespace<R> {
  readonly name: string;
  /** Never set: carries the record type (see {@link sharedRecords}). */
  readonly records?: R;
}

/** Declares a shared namespace. Only this module declares them. */
function namespace<R>(name: string): SharedNamespace<R> {
  return Object.freeze({ name });
}

/** The store's kv namespace behind a shared namespace: the one place its `shared:` prefix is written. */
export function sharedKvName(ns: string | SharedNamespace<unknown>): string {
  return `shared:${typeof ns === 'string' ? ns : ns.name}`;
}

/** A shared namespace's state, as `ctx.shared(ns)` gives it to actions (plugins name theirs with a string). */
export function sharedState(store: Pick<EngineStore, 'kv'>, ns: string | SharedNamespace<unknown>): DurableState {
  return store.kv(sharedKvName(ns));
}

/** A declared namespace's records, typed. */
export interface SharedRecords<R> {
  get(key: string): Promise<R | undefined>;
  set(key: string, value: R): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key with this prefix, with its record. */
  entries(prefix?: string): Promise<Array<[string, R]>>;
}

/** A declared namespace's records, typed by its declaration. */
export function sharedRecords<R>(store: Pick<EngineStore, 'kv'>, ns: SharedNamespace<R>): SharedRecords<R> {
  const kv = sharedState(store, ns);
  return {
    get: (key) => kv.get<R>(key),
    set: (key, value) => kv.set(key, value),
    delete: (key) => kv.delete(key),
    entries: (prefix) => kv.entries<R>(prefix),
  };
}

/** `${identity}:${scope}` -> the instance-wide pause (engine/run/pauses.ts): `msgflow pauses`, the dashboard's Lift. */
export const PAUSES_NS = namespace<PauseRecord>('pauses');
/** `${identity}:${chatId}` -> the chat is never broadcast to (optOut actions, the notification consumer, the dashboard). */
export const OPT_OUT_NS = namespace<OptOutRecord>('opt-out');
/** `${identity}:${idMessage}` -> an outgoing message's last status, as the notification consumer recorded it. */
export const OUTGOING_STATUS_NS = namespace<OutgoingStatusRecord>('outgoing-status');
/** `${identity}:${chatId}` -> the latest incoming messages of a chat (waitForReply). */
export const INCOMING_NS = namespace<IncomingChatRecord>('incoming');
/** `${identity}|${flow}|${chatId}` -> a dialog's session with the chat (actions/dialog.ts, `msgflow sessions`, the dashboard). */
export const DIALOG_SESSIONS_NS = namespace<Session>('dialog-sessions');
/** Same keys -> when that session ends for silence: only live sessions with an `idle:` have one (the idle sweeper reads them). */
export const DIALOG_IDLE_NS = namespace<IdleTimer>('dialog-idle');
/** `${identity}:${chatId}` -> the chat is handed to a human: the bot keeps quiet in it (conversation/handover.ts). */
export const HANDOVER_NS = namespace<Handover>('handover');
/** `${identity}` -> the instance's notifications are consumed since `since`. */
export const CONSUMERS_NS = namespace<ConsumerRecord>('notification-consumers');

// Families: one namespace per instance identity, each written and read by
// one action, whose module types its records.

/** checkAccount.bulk's result cache of an instance: one CachedCheck per number or username. */
export const checkAccountCacheNs = (identity: string) => namespace<unknown>(`checkAccount:${identity}`);
/** contacts.import's record of what msgflow wrote to an instance's contact list. */
export const contactsNs = (identity: string) => namespace<unknown>(`contacts:${identity}`);
/** outgoing.audit's stored audits of an instance, for the trend. */
export const auditNs = (identity: string) => namespace<unknown>(`audit:${identity}`);
/** files.broadcast's records of one campaign (`with.campaign`) on an instance, kept across runs. */
export const broadcastCampaignNs = (identity: string, campaign: string) => namespace<unknown>(`broadcast:${identity}:${campaign}`);
/** `${identity}:first` (the day an instance first sent a broadcast) and `${identity}:${YYYY-MM-DD}` (its broadcast sends that day): daily caps and warm-up across campaigns. */
export const BROADCAST_USAGE_NS = namespace<{ day?: string; sends?: number }>('broadcast-usage');
/** `${flow}|${step}|${createdAt}` -> the run that applied a campaign plan (msgflow apply) of a broadcast without a campaign name: applied once. */
export const BROADCAST_PLANS_NS = namespace<{ runId: string; at: number }>('broadcast-plans');
/** `${chatId}` -> the instance that sends a pool's broadcasts to this chat (sticky across campaigns). */
export const BROADCAST_SENDERS_NS = namespace<{ identity: string; name: string; at: number }>('broadcast-senders');
/**
 * `${identity}|${scope}|e|${sentAt}|${chatId}` -> one send of a campaign (its pause scope) from the instance, in the
 * health guard's sliding windows (actions/broadcast-guard.ts); `${identity}|${scope}|since` -> since when each
 * threshold counts (a trip starts its window afresh).
 */
export const BROADCAST_HEALTH_NS = namespace<unknown>('broadcast-health');
