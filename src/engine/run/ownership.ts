/**
 * One live owner per run (and per daemon, per concurrency slot), across
 * processes and hosts, through leases in the store.
 *
 * A holder is dead when its lease lapsed (its heartbeat stopped), whatever
 * its host. On the holder's own host it is also dead, without waiting for the
 * lapse, when its pid is gone, is a zombie (killed but not reaped: it will
 * never run again), or now belongs to another process (its start time
 * differs: pid reuse). A holder on another host is alive until its lease
 * lapses: we cannot see its processes.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { FlowError } from '../../api/errors.js';
import type { EngineStore, Lease } from '../../store/types.js';
import { isProcessAlive } from '../../util/process-alive.js';

/** @default 30000: a crashed holder on another host blocks its run this long. */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** This machine's id in leases: MSGFLOW_HOST_ID (tests simulate two hosts with it), else the hostname. */
export function defaultHostId(): string {
  return process.env.MSGFLOW_HOST_ID || hostname();
}

/** Lease TTL from MSGFLOW_LEASE_TTL_MS (tests shorten it), else the default. */
export function defaultLeaseTtlMs(): number {
  const v = Number(process.env.MSGFLOW_LEASE_TTL_MS);
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_LEASE_TTL_MS;
}

interface ProcStat {
  state: string;
  start: string;
}

/** State and start time of a process from /proc (Linux); undefined elsewhere or when gone. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) S ppid ...": comm may contain spaces and parentheses, so split after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After comm: state is field 3, starttime field 22 → rest[0] and rest[19].
  return { state: rest[0] ?? '?', start: rest[19] ?? '' };
}

const selfStart = procStat(process.pid)?.start;

/** Whether a process on this host is alive and runs (a zombie does not). */
export function processRuns(pid: number, procStart?: string): boolean {
  if (!isProcessAlive(pid)) return false;
  const st = procStat(pid);
  if (!st) return true; // no /proc: kill(pid, 0) is all we know
  if (st.state === 'Z' || st.state === 'X') return false;
  return procStart === undefined || st.start === procStart;
}

/** Whether the holder of a lease is dead (see the module comment). */
export function holderDead(holder: Lease, hostId: string, now = Date.now()): boolean {
  if (holder.expiresAt <= now) return true;
  if (holder.host !== hostId) return false;
  // Our own pid: alive, unless the claim is from an earlier process that had
  // the same pid (a container restarted as pid 1 under the same hostname).
  if (holder.pid === process.pid) return holder.procStart !== undefined && selfStart !== undefined && holder.procStart !== selfStart;
  return !processRuns(holder.pid, holder.procStart);
}

export interface OwnerOptions {
  store: EngineStore;
  hostId: string;
  ttlMs: number;
}

export type ClaimResult = { ok: true } | { ok: false; holder: Lease };

/**
 * The claims of one owner (a run execution, a daemon): one token, renewed
 * together by one heartbeat. `check()` is called before every writing call.
 */
export class LeaseOwner {
  readonly token = randomUUID();
  private readonly names = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private lostReason: string | undefined;
  private expiresAt = 0;
  private beating: Promise<void> = Promise.resolve();
  /** The reading of the claims under way, which checks asked meanwhile share. */
  private reading: Promise<void> | undefined;
  /** Called once when a claim is found lost (taken over after a lapse). */
  onLost?: (reason: string) => void;
  /** Called after each heartbeat: the place for cheap polling (cancel requests). */
  onBeat?: () => Promise<void>;

  constructor(
    private readonly opts: OwnerOptions,
    private readonly base: { runId?: string; label?: string } = {},
  ) {}

  get lost(): string | undefined {
    return this.lostReason;
  }

  private lease(now: number): Lease {
    return {
      token: this.token,
      pid: process.pid,
      host: this.opts.hostId,
      ...(selfStart ? { procStart: selfStart } : {}),
      acquiredAt: now,
      expiresAt: now + this.opts.ttlMs,
      ...this.base,
    };
  }

  /** Takes `name`, breaking it first when its holder is dead. */
  async claim(name: string): Promise<ClaimResult> {
    for (let tries = 0; tries < 5; tries++) {
      const now = Date.now();
      const lease = this.lease(now);
      const holder = await this.opts.store.acquireLease(name, lease);
      if (!holder) {
        this.names.add(name);
        this.expiresAt = Math.max(this.expiresAt, lease.expiresAt);
        return { ok: true };
      }
      if (!holderDead(holder, this.opts.hostId, now)) return { ok: false, holder };
      // Dead on this host before its lease lapsed (kill -9, zombie): break it, then claim again.
      await this.opts.store.releaseLease(name, holder.token);
    }
    const holder = await this.opts.store.getLease(name);
    return holder ? { ok: false, holder } : { ok: false, holder: this.lease(Date.now()) };
  }

  async release(name?: string): Promise<void> {
    const names = name ? [name] : [...this.names];
    for (const n of names) {
      this.names.delete(n);
      await this.opts.store.releaseLease(n, this.token).catch(() => {});
    }
    if (this.names.size === 0) this.stop();
  }

  /** Starts renewing every claim every ttl/3 (real time; the timer does not keep the process up). */
  startHeartbeat(): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => {
        this.beating = this.beating.then(() => this.beat()).catch(() => {});
      },
      Math.max(10, Math.floor(this.opts.ttlMs / 3)),
    );
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async beat(): Promise<void> {
    if (this.lostReason) return;
    const expiresAt = Date.now() + this.opts.ttlMs;
    for (const n of this.names) {
      let ok: boolean;
      try {
        ok = await this.opts.store.renewLease(n, this.token, expiresAt);
      } catch {
        continue; // store unreachable: the lease may still be ours; check() decides before any write
      }
      if (!ok) return this.markLost(`the claim on ${n} was taken over`);
    }
    this.expiresAt = expiresAt;
    await this.onBeat?.();
  }

  private markLost(reason: string): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.stop();
    this.onLost?.(reason);
  }

  /**
   * Before a writing call: throws RUN_OWNERSHIP_LOST unless every claim is
   * still ours in the store and will not lapse for a while. Checks asked
   * while a reading of the claims is under way share it (records in flight
   * ask in bursts, and each paid a lease read of its own): that reading
   * began at most one store round trip before them (in the same turn of the
   * event loop with lowdb, whose reads are synchronous), and a claim it found
   * ours with at least a third of its ttl left cannot be taken over before
   * it lapses.
   */
  async check(): Promise<void> {
    if (!this.lostReason) await (this.reading ?? this.readClaims());
    if (this.lostReason) throw new FlowError('RUN_OWNERSHIP_LOST', { reason: this.lostReason });
  }

  /** Reads every claim (see {@link check}), shared by the checks asked until it settles. */
  private readClaims(): Promise<void> {
    const reading = this.readClaimsNow();
    this.reading = reading;
    const done = () => {
      if (this.reading === reading) this.reading = undefined;
    };
    reading.then(done, done);
    return reading;
  }

  private async readClaimsNow(): Promise<void> {
    const now = Date.now();
    for (const n of this.names) {
      const cur = await this.opts.store.getLease(n);
      if (!cur || cur.token !== this.token) {
        this.markLost(`the claim on ${n} was taken over`);
        break;
      }
      if (cur.expiresAt - now < this.opts.ttlMs / 3) {
        // The heartbeat is late: renew now rather than write on a lease about to lapse.
        if (!(await this.opts.store.renewLease(n, this.token, now + this.opts.ttlMs))) {
          this.markLost(`the claim on ${n} lapsed`);
          break;
        }
      }
    }
  }
}

/** `pid 123 on host a` for messages. */
export function describeHolder(h: Lease): string {
  return `pid ${h.pid} on host ${h.host}`;
}
