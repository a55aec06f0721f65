/**
 * Instance-wide pauses, an engine concept: after some answers (checkAccount's
 * `rate_limit_exceeded`) every call of a method on the instance must wait,
 * whatever run, flow, process or host makes it. An action declares the rule
 * (ActionDefinition.pauses: which method, which failure raises it, how long
 * at least); this module owns the mechanism:
 *
 * - the record: ONE per instance and scope in the shared namespace `pauses`,
 *   key `${identity}:${scope}` (what `msgflow pauses` lists and the
 *   dashboard's Lift deletes);
 * - raise: max(minimum, the service's Retry-After) from now, never shorter
 *   than a pause already raised;
 * - honour: the client's pause interceptor (interceptors/pauses.ts) answers a
 *   held call with a PauseError, the unit runner (or the action) waits on
 *   {@link pauseWait}: durable, keyed by the pause's end, and woken at once
 *   when the record is lifted or changed (`lifted`, read from the store, so a
 *   lift from any process or host wakes it).
 */
import type { ApiMethod } from '../../api/methods.js';
import type { DurableState, EngineStore } from '../../store/types.js';
import { formatDuration } from '../../util/duration.js';
import type { ActionContext, ActionDefinition, InstanceRef, WaitOptions } from '../action.js';
import { PAUSES_NS, sharedKvName, sharedRecords, type SharedNamespace, type SharedRecords } from '../shared.js';

/**
 * What an action declares about a pause (ActionDefinition.pauses): the rule
 * holds every call of `method` on the instance, from every unit of every run,
 * once a failure of it raised the pause.
 *
 * @example { scope: 'checkAccount', method: 'checkAccount', cause: 'rate_limit_exceeded', minMs: 2 * 3_600_000,
 *   raisedBy: (e) => (e instanceof RateLimitError && e.scope === 'checkAccount' ? e.retryAfterMs : undefined) }
 */
export interface PauseRule<I = any> {
  /** Names the pause: the record's `scope` and its key (`${identity}:${scope}`). */
  scope: string;
  /** The method whose calls it holds and whose failure raises it. */
  method: ApiMethod;
  /** Whether a failure of the method raises the pause: the wait the service asked for (ms, 0 when it did not say), else undefined. */
  raisedBy(error: unknown): number | undefined;
  /** What raised it, as the record's reason says: `rate_limit_exceeded`. */
  cause: string;
  /** Shortest pause once raised; the service's Retry-After wins when longer. */
  minMs: number;
  /**
   * The declaring action's own shortest pause, from its `with:` (e.g.
   * checkAccount.bulk's `pause`), for the pauses its calls raise.
   * @default minMs
   */
  minMsFrom?(input: I): number | undefined;
}

/** An instance-wide pause, as stored. */
export interface PauseRecord {
  /** Config name of the instance when the pause was raised. */
  instance: string;
  identity: string;
  /** The rule's scope, e.g. `checkAccount`. */
  scope: string;
  /** End, ms since the epoch. */
  until: number;
  since: number;
  retryAfterMs: number;
  /** Why, never when (views add `until` themselves): `rate_limit_exceeded (retryAfter 2h)`. */
  reason: string;
  /** A campaign's health guard raised it (messages.broadcast): the run that met the danger, for `campaign-paused` alerts. */
  campaign?: CampaignPause;
}

/** What a campaign's pause says of the campaign (PauseRecord.campaign). */
export interface CampaignPause {
  /** The campaign's name (`with.campaign`), else `<flow>/<step>`. */
  name: string;
  flow: string;
  step: string;
  runId: string;
}

/** The key of an instance's pause of a scope. */
export function pauseKey(identity: string, scope: string): string {
  return `${identity}:${scope}`;
}

/** The pause records of every instance (made once by a caller that asks per call). */
export function pauseRecords(store: Pick<EngineStore, 'kv'>): SharedRecords<PauseRecord> {
  return sharedRecords(store, PAUSES_NS);
}

/** The pause of an instance's scope in force at `now`, if any, from {@link pauseRecords}. */
export async function activePause(
  pauses: SharedRecords<PauseRecord>,
  identity: string,
  scope: string,
  now: number,
): Promise<PauseRecord | undefined> {
  const p = await pauses.get(pauseKey(identity, scope));
  return p && p.until > now ? p : undefined;
}

export interface RaiseOptions {
  /** When the answer that raised it came (ms). */
  since: number;
  /** The wait the service asked for (0 when it did not say). */
  retryAfterMs: number;
  /** The shortest pause. */
  minMs: number;
  /** Raised by a worker's item rather than a job: the reason says so. */
  byWorker?: boolean;
  /** Raised by a campaign's health guard: kept in the record; the reason is the guard's alone (no Retry-After is involved). */
  campaign?: CampaignPause;
}

/**
 * Raises the instance-wide pause of a rule's scope, or extends the one in
 * force: `minMs` or the service's Retry-After from `since`, whichever is
 * longer, and never shorter than a pause already raised.
 */
export async function raisePause(
  store: Pick<EngineStore, 'kv'>,
  instance: InstanceRef,
  rule: Pick<PauseRule, 'scope' | 'cause'>,
  o: RaiseOptions,
): Promise<PauseRecord> {
  const records = sharedRecords(store, PAUSES_NS);
  const key = pauseKey(instance.identity, rule.scope);
  const current = await records.get(key);
  const until = Math.max(o.since + Math.max(o.minMs, o.retryAfterMs), current?.until ?? 0);
  // Why, not when: `until` is a field of its own, and every view says it once.
  const why = `retryAfter ${formatDuration(o.retryAfterMs)}${o.byWorker ? '; raised by a worker' : ''}`;
  const record: PauseRecord = {
    instance: instance.name,
    identity: instance.identity,
    scope: rule.scope,
    until,
    since: o.since,
    retryAfterMs: o.retryAfterMs,
    reason: o.campaign ? rule.cause : `${rule.cause} (${why})`,
    ...(o.campaign ? { campaign: o.campaign } : {}),
  };
  await records.set(key, record);
  return record;
}

/** Every pause record, lapsed ones included, with its key; a field may be missing from a record another version wrote. */
export async function listPauses(store: Pick<EngineStore, 'kv'>): Promise<Array<[string, Partial<PauseRecord>]>> {
  return (await sharedRecords(store, PAUSES_NS).entries()).map(([k, p]) => [k, p ?? {}]);
}

/**
 * Lifts (deletes) the pauses of an instance, named by its config name or its
 * identity: runs waiting on them call the instance again at once. Returns
 * what it lifted, with their keys.
 */
export async function liftPauses(
  store: Pick<EngineStore, 'kv'>,
  target: { name?: string; identity?: string },
  /** Told what is lifted before it is (engine/alerts/campaign.ts writes the campaigns' resumed occurrences). */
  before?: (hits: Array<[string, Partial<PauseRecord>]>) => Promise<void>,
): Promise<Array<[string, Partial<PauseRecord>]>> {
  const records = sharedRecords(store, PAUSES_NS);
  const hits = (await listPauses(store)).filter(
    ([key, p]) =>
      (target.name !== undefined && p.instance === target.name) ||
      (target.identity !== undefined && (p.identity === target.identity || key.startsWith(`${target.identity}:`))),
  );
  await before?.(hits);
  for (const [key] of hits) await records.delete(key);
  return hits;
}

/**
 * The durable wait that honours a pause: its key is derived from the pause's
 * end (after a restart the same wait is found and only what is left is
 * slept), and it ends at once when the record is lifted or changed (read
 * again through `shared`, an action's ctx.shared or the engine's
 * sharedState), as if its time had come.
 */
export function pauseWait(
  p: Pick<PauseRecord, 'scope' | 'identity' | 'until' | 'reason'>,
  shared: (ns: SharedNamespace<PauseRecord>) => Pick<DurableState, 'get'>,
): WaitOptions {
  const pauses = shared(PAUSES_NS);
  const key = pauseKey(p.identity, p.scope);
  return {
    until: p.until,
    reason: `${p.scope} paused by ${p.reason}`,
    key: `${p.scope}-pause-${p.until}`,
    lifted: async () => (await pauses.get<PauseRecord>(key))?.until !== p.until,
  };
}

/**
 * The pause rules every unit honours: those declared by any action of the
 * registry (a pause is instance-wide), one per scope (the first declared).
 */
export function declaredPauseRules(actions: Iterable<Pick<ActionDefinition, 'pauses'>>): PauseRule[] {
  const byScope = new Map<string, PauseRule>();
  for (const a of actions) for (const r of a.pauses ?? []) if (!byScope.has(r.scope)) byScope.set(r.scope, r);
  return [...byScope.values()];
}

/**
 * The rules of one unit: every declared rule, those its own action declares
 * with the action's shortest pause from its input (PauseRule.minMsFrom).
 */
export function unitPauseRules(
  declared: readonly PauseRule[],
  action: Pick<ActionDefinition, 'pauses'> | undefined,
  input: unknown,
): readonly PauseRule[] {
  const own = action?.pauses ?? [];
  if (own.length === 0) return declared;
  const rules = new Map(declared.map((r) => [r.scope, r]));
  for (const r of own) rules.set(r.scope, { ...r, minMs: r.minMsFrom?.(input) ?? r.minMs });
  return [...rules.values()];
}

/**
 * The pauses as an action reaches them (ctx.shared), in the shape the
 * functions of this module take: an action that raises or reads pauses of
 * its own scope (a broadcast's health guard) goes through it.
 */
export function actionPauses(ctx: Pick<ActionContext, 'shared'>): Pick<EngineStore, 'kv'> {
  return {
    kv: (name: string) => {
      if (name !== sharedKvName(PAUSES_NS)) throw new Error(`actionPauses: ${name} is not the pauses' namespace`);
      return ctx.shared(PAUSES_NS);
    },
  };
}
