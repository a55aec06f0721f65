/**
 * What the Instances page and the send-queue metric show of each configured
 * instance, asked of the instance itself: its state (getStateInstance), its
 * send queue (showMessagesQueue) and the queue's interval (getSettings); and
 * the size of its opt-out list (the shared `opt-out` namespace, written by
 * the notification consumer).
 *
 * Answers are cached and refreshed in the background once stale, so a page
 * load never waits for an instance (except the very first) and a busy page
 * or a scraper cannot spend the instance's request quota: at most one round
 * of calls per instance every `ttlMs`.
 */
import { OPT_OUT_NS, sharedState } from '../engine/shared.js';
import type { Runtime } from '../runtime/runtime.js';

/** One instance as the dashboard sees it. */
export interface InstanceLive {
  /** true: it answered getStateInstance; false: the call failed (`error` is the code); null: not asked (`note` says why). */
  reachable: boolean | null;
  /** Its stateInstance, e.g. `authorized`. */
  state?: string;
  /** The error code of a failed call (never its message: it could quote a URL). */
  error?: string;
  note?: string;
  /** Its send queue, when showMessagesQueue answered. */
  queue?: SendQueueView;
  /** The code of a failed showMessagesQueue (the state may still be known). */
  queueError?: string;
  /** When these were asked (ms since the epoch). */
  checkedAt: number;
}

export interface SendQueueView {
  /** Messages waiting to be sent. */
  length: number;
  /** The interval between two releases (getSettings delaySendMessagesMilliseconds), when known. */
  sendIntervalMs?: number;
  /**
   * The latest time the next message leaves: one interval from when the
   * queue was read (the service says when a message was queued, not when it
   * leaves). Absent when the queue is empty or the interval unknown.
   */
  nextReleaseBy?: number;
}

/** The code of a failed call: the catalogue's, or what the call died of. */
function codeOf(e: unknown): string {
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  if ((e as Error | undefined)?.name === 'TimeoutError') return 'TIMEOUT';
  return 'UNKNOWN';
}

/** How long a round of calls may take before the instance counts as unreachable. @default 4000 */
const CALL_BUDGET_MS = 4000;

async function askInstance(runtime: Runtime, name: string, now: () => number): Promise<InstanceLive> {
  const api = runtime.clientFor(name);
  const signal = AbortSignal.timeout(CALL_BUDGET_MS);
  const checkedAt = now();
  let state: string;
  try {
    state = (await api.getStateInstance({}, { signal })).stateInstance;
  } catch (e) {
    return { reachable: false, error: runtime.redactor.scrub(codeOf(e)), checkedAt };
  }
  const out: InstanceLive = { reachable: true, state, checkedAt };
  try {
    const [queue, settings] = await Promise.all([
      api.showMessagesQueue({}, { signal }),
      api.getSettings({}, { signal }).catch(() => undefined),
    ]);
    const sendIntervalMs = settings?.delaySendMessagesMilliseconds;
    out.queue = {
      length: queue.length,
      ...(sendIntervalMs !== undefined ? { sendIntervalMs } : {}),
      ...(queue.length > 0 && sendIntervalMs !== undefined ? { nextReleaseBy: checkedAt + sendIntervalMs } : {}),
    };
  } catch (e) {
    out.queueError = runtime.redactor.scrub(codeOf(e));
  }
  return out;
}

/** A value refreshed in the background once older than ttlMs; only the first read waits. */
function staleWhileRevalidate<T>(ttlMs: number, now: () => number, read: () => Promise<T>): () => Promise<T> {
  let value: { at: number; v: T } | undefined;
  let pending: Promise<T> | undefined;
  const refresh = () =>
    (pending ??= read()
      .then((v) => {
        value = { at: now(), v };
        return v;
      })
      .finally(() => (pending = undefined)));
  return async () => {
    if (!value) return refresh();
    if (now() - value.at >= ttlMs) void refresh().catch(() => {});
    return value.v;
  };
}

export interface InstanceProbeOptions {
  /** Whether a local instance may be asked (opening the local service: see UiServerOptions.probeLocal). @default true */
  probeLocal?: boolean;
  /** How long an answer is served before it is asked again. @default 5000 */
  ttlMs?: number;
  /** How long an opt-out count is served before the list is counted again. @default 60000 */
  optOutTtlMs?: number;
}

export interface InstanceProbe {
  /** The instance's state and queue (cached). */
  live(name: string): Promise<InstanceLive>;
  /** Entries of the opt-out list of an identity (cached). */
  optOuts(identity: string): Promise<number>;
}

export function createInstanceProbe(runtime: Runtime, opts: InstanceProbeOptions = {}): InstanceProbe {
  const now = () => Date.now();
  const lives = new Map<string, () => Promise<InstanceLive>>();
  const counts = new Map<string, () => Promise<number>>();
  return {
    live(name) {
      const inst = runtime.config.instances[name];
      if (inst?.apiUrl === 'local' && opts.probeLocal === false) {
        return Promise.resolve({
          reachable: null,
          // What "not asked" means and when it changes, shown under it on the Instances page.
          note:
            'not asked: this dashboard (msgflow ui) does not open the local service, which belongs to msgflow start ' +
            'or to a msgflow run while it runs (opening it here would lock them out). The dashboard that msgflow start ' +
            'serves asks it and shows its state.',
          checkedAt: now(),
        });
      }
      let get = lives.get(name);
      if (!get) lives.set(name, (get = staleWhileRevalidate(opts.ttlMs ?? 5000, now, () => askInstance(runtime, name, now))));
      return get();
    },
    optOuts(identity) {
      let get = counts.get(identity);
      if (!get) {
        const read = async () => (await sharedState(runtime.store, OPT_OUT_NS).entries(`${identity}:`)).length;
        counts.set(identity, (get = staleWhileRevalidate(opts.optOutTtlMs ?? 60_000, now, read)));
      }
      return get();
    },
  };
}
