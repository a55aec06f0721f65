/**
 * The client's side of instance-wide pauses (../pauses.ts): a call of a
 * method a pause rule holds is not made while the instance's pause is in
 * force, and a failure that raises the pause writes it; either way the call
 * answers a PauseError, which the unit runner (or the action) honours.
 */
import type { ApiInterceptor } from '../../../client/interceptors.js';
import type { EngineStore } from '../../../store/types.js';
import type { Clock } from '../../../util/clock.js';
import type { InstanceRef } from '../../action.js';
import { PauseError, type PauseInfo } from '../../control.js';
import { activePause, pauseRecords, raisePause, type PauseRecord, type PauseRule } from '../pauses.js';

export interface PauseInterceptorOptions {
  store: Pick<EngineStore, 'kv'>;
  clock: Clock;
  instance: InstanceRef;
  rules: readonly PauseRule[];
  /** The calls are a BullMQ worker's: a pause they raise says so. @default false */
  byWorker?: boolean;
  /** A call's answer raised (or extended) the pause. */
  onRaised?(record: PauseRecord): void;
}

/** What a PauseError says of a record. */
function pauseInfo(p: PauseRecord): PauseInfo {
  return { scope: p.scope, instance: p.instance, identity: p.identity, until: p.until, reason: p.reason };
}

export function pauseInterceptor(o: PauseInterceptorOptions): ApiInterceptor {
  // Once, not per call: a bulk job asks before each of a million checks.
  const pauses = pauseRecords(o.store);
  // The first rule of each method, looked up per call without a closure.
  const ruleOf = new Map<string, PauseRule>();
  for (const r of o.rules) if (!ruleOf.has(r.method)) ruleOf.set(r.method, r);
  return {
    name: 'pauses',
    appliesTo: (method) => ruleOf.has(method),
    async call(c, next) {
      const rule = ruleOf.get(c.method)!;
      const held = await activePause(pauses, o.instance.identity, rule.scope, o.clock.now());
      if (held) throw new PauseError(pauseInfo(held));
      try {
        return await next();
      } catch (e) {
        const retryAfterMs = rule.raisedBy(e);
        if (retryAfterMs === undefined) throw e;
        const since = o.clock.now();
        const raised = await raisePause(o.store, o.instance, rule, { since, retryAfterMs, minMs: rule.minMs, byWorker: o.byWorker });
        o.onRaised?.(raised);
        throw new PauseError({ ...pauseInfo(raised), raised: { retryAfterMs } }, { cause: e });
      }
    },
  };
}
