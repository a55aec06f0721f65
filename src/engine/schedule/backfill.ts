/**
 * Backfill (`msgflow backfill FLOW --from T1 --to T2`): the slots of a flow's
 * schedule in a past (or any) range, each run once, marked `trigger:
 * backfill` with the slot it stands for.
 *
 * Once each: a slot's run id is derived from the flow and the slot, so a
 * second backfill of the same range finds the runs of the first and starts
 * nothing new. The runs respect the flow's concurrency: a slot whose start
 * finds every slot of the flow's group busy waits for one of them to end.
 */
import { FlowError, MsgflowError } from '../../api/errors.js';
import type { EngineStore, RunRecord, RunStatus } from '../../store/types.js';
import { zoneOf, type Clock } from '../../util/clock.js';
import type { Flow } from '../flow/types.js';
import type { Engine, RunHandle } from '../run/types.js';
import { missedSlots } from './slots.js';

/** The most slots one backfill may run: a per-second cron over a year must be refused, not started. */
export const MAX_BACKFILL_SLOTS = 1000;

/** One slot of a backfill: the run it has, or will have. */
export interface BackfillSlot {
  /** The slot, ms since the epoch. */
  slot: number;
  runId: string;
  /** The status of the run an earlier backfill started for this slot; absent for a slot this backfill starts. */
  existing?: RunStatus;
}

/**
 * The run id of a flow's slot: the same flow and slot always give the same id.
 *
 * @example backfillRunId('nightly', Date.UTC(2026, 0, 5, 9)) // 'nightly-bmk0x8dc0'
 */
export function backfillRunId(flow: string, slot: number): string {
  const name = flow.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64) || 'flow';
  return `${name}-b${slot.toString(36)}`;
}

function invalid(flow: Flow, reason: string): FlowError {
  return new FlowError('BACKFILL_INVALID', { flow: flow.name, reason });
}

/**
 * The flow's slots in [`from`, `to`] (ms) with their run ids, and the status
 * of those an earlier backfill ran. BACKFILL_INVALID when the flow has no
 * schedule, the range is reversed, or it holds more than {@link MAX_BACKFILL_SLOTS}.
 */
export async function planBackfill(store: EngineStore, clock: Clock, flow: Flow, from: number, to: number): Promise<BackfillSlot[]> {
  const schedule = flow.on.schedule;
  if (!schedule) throw invalid(flow, 'it has no on.schedule: only a scheduled flow has slots to backfill');
  if (!Number.isFinite(from) || !Number.isFinite(to)) throw invalid(flow, '--from and --to must be times');
  if (to < from) throw invalid(flow, `--to ${new Date(to).toISOString()} is before --from ${new Date(from).toISOString()}`);
  const zone = schedule.timezone ?? zoneOf(clock);
  const { slots, truncated } = missedSlots(schedule.cron, zone, from - 1, to, MAX_BACKFILL_SLOTS);
  if (truncated) throw invalid(flow, `the range holds more than ${MAX_BACKFILL_SLOTS} slots of '${schedule.cron}': backfill it in parts`);
  return Promise.all(
    slots.map(async (slot) => {
      const runId = backfillRunId(flow.name, slot);
      const run = await store.getRun(runId);
      return run ? { slot, runId, existing: run.status } : { slot, runId };
    }),
  );
}

export interface BackfillOptions {
  /** How long (real time) to wait before trying a slot again whose start found the flow's concurrency taken by runs not of this backfill. @default 500 */
  pollMs?: number;
  /** Called with each run as it starts. */
  onStart?(slot: BackfillSlot): void;
  /** Stops starting slots (those started go on). */
  signal?: AbortSignal;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts the plan's new slots, oldest first, and resolves with their runs as
 * they ended. A slot whose start meets RUN_LIVE (the flow's concurrency is
 * taken) waits for one of this backfill's runs to end, or `pollMs` when none
 * of them is running, and is tried again.
 */
export async function runBackfill(
  engine: Pick<Engine, 'start' | 'getRun'>,
  flow: Flow,
  plan: readonly BackfillSlot[],
  opts: BackfillOptions = {},
): Promise<RunRecord[]> {
  const running = new Map<string, Promise<RunRecord>>();
  const ended: RunRecord[] = [];
  for (const s of plan) {
    if (s.existing) continue;
    for (;;) {
      if (opts.signal?.aborted) return [...ended, ...(await Promise.all(running.values()))];
      // Another backfill of the same range may have started it meanwhile.
      if (await engine.getRun(s.runId)) break;
      let h: RunHandle;
      try {
        h = await engine.start(flow, { runId: s.runId, trigger: 'backfill', slot: s.slot });
      } catch (e) {
        if (!(e instanceof MsgflowError && e.code === 'RUN_LIVE')) throw e;
        await (running.size > 0 ? Promise.race(running.values()) : sleep(opts.pollMs ?? 500));
        continue;
      }
      opts.onStart?.(s);
      running.set(
        s.runId,
        h.done.then((r) => {
          running.delete(s.runId);
          ended.push(r);
          return r;
        }),
      );
      break;
    }
  }
  await Promise.all(running.values());
  return ended;
}
