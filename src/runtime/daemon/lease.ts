/**
 * One daemon per store, across processes and hosts: a second one would fire
 * every schedule twice. The daemon's runtime is opened holding the store's
 * `daemon` lease (heartbeated), claimed before the local service listens, so
 * a second daemon is refused before it touches the port or the data directory.
 */
import { FlowError } from '../../api/errors.js';
import { defaultHostId, defaultLeaseTtlMs, describeHolder, LeaseOwner } from '../../engine/run/ownership.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime.js';

/** What the lease is called in `msgflow runs`-style descriptions of its holder. */
const LEASE_LABEL = 'msgflow start';

/**
 * The daemon's runtime and its claim (none with executor bullmq: replicas are
 * the point there, each slot one BullMQ job taken by one of them). Rejects
 * with FlowError DAEMON_RUNNING naming the holder when another daemon has it.
 */
export async function openDaemonRuntime(opts: Omit<RuntimeOptions, 'beforeListen'>): Promise<{ runtime: Runtime; lease?: LeaseOwner }> {
  let lease: LeaseOwner | undefined;
  try {
    const runtime = await createRuntime({
      ...opts,
      beforeListen: async (store) => {
        if (opts.config.executor.driver === 'bullmq') return;
        const owner = new LeaseOwner({ store, hostId: defaultHostId(), ttlMs: defaultLeaseTtlMs() }, { label: LEASE_LABEL });
        const claim = await owner.claim('daemon');
        if (!claim.ok) throw new FlowError('DAEMON_RUNNING', { holder: describeHolder(claim.holder) });
        owner.startHeartbeat();
        lease = owner;
      },
    });
    return { runtime, lease };
  } catch (e) {
    // Start-up failed after the claim (a plugin that does not load, a busy port): the next start must not find it taken.
    await lease?.release();
    throw e;
  }
}
