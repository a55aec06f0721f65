/**
 * A case's other flows (`flows:`), started as `msgflow start` starts them:
 * on the case's notifications (its consumer loads them beside the case's
 * flow) and on its alerts (the daemon's own alert monitor and dispatcher,
 * engine/alerts: a failed run, a campaign's pause...), on the case's engine,
 * store and clock. The case waits for their runs as for its own, and
 * `expect.runs` looks at every run of the case.
 */
import type { Logger } from '../../engine/action.js';
import { startAlertMonitor, type AlertMonitor } from '../../engine/alerts/monitor.js';
import type { EngineBus } from '../../engine/events.js';
import type { Flow } from '../../engine/flow/types.js';
import type { Engine, RunHandle } from '../../engine/run/types.js';
import type { EngineStore } from '../../store/types.js';
import type { VirtualClock } from '../../util/virtual-clock.js';
import { match, type Mismatch } from './match.js';
import type { FlowTestCase } from './schema.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export interface CaseOthers {
  /** The engine as the consumer and the alert dispatcher start runs with: each run of an other flow is waited for. */
  readonly engine: Pick<Engine, 'start' | 'activeRuns'>;
  /** Once the case's run ended: the alerts it left are handled, and every run they (or notifications) started has ended. */
  settle(): Promise<void>;
  stop(): void;
}

export function startOthers(o: {
  engine: Engine;
  store: EngineStore;
  bus: EngineBus;
  clock: VirtualClock;
  others: readonly Flow[];
}): CaseOthers {
  const handles: RunHandle[] = [];
  const engine: Pick<Engine, 'start' | 'activeRuns'> = {
    async start(flow, opts) {
      const h = await o.engine.start(flow, opts);
      // The case's own flow is waited for as before (its first run); the others' runs are the case's to wait for here.
      if (o.others.some((f) => f.name === flow.name)) handles.push(h);
      return h;
    },
    activeRuns: () => o.engine.activeRuns(),
  };
  // Passes come from the bus (a campaign's pause at once) and from settle(); never from wall-clock timers.
  const monitor: AlertMonitor | undefined =
    o.others.length > 0
      ? startAlertMonitor({
          engine,
          store: o.store,
          bus: o.bus,
          clock: o.clock,
          logger: quiet,
          flows: () => o.others,
          checkEveryMs: 2 ** 30,
        })
      : undefined;
  return {
    engine,
    async settle() {
      for (let seen = -1; seen !== handles.length;) {
        seen = handles.length;
        await monitor?.check();
        await Promise.all(handles.map((h) => h.done));
      }
    },
    stop: () => monitor?.stop(),
  };
}

/** `expect.runs`: for each entry, how many runs of its flow match it (at least one, or exactly `count`). */
export async function runsMismatches(
  expected: NonNullable<FlowTestCase['expect']['runs']>,
  engine: Pick<Engine, 'listRuns' | 'getSteps'>,
): Promise<Mismatch[]> {
  const out: Mismatch[] = [];
  for (const [i, { flow, count, ...want }] of expected.entries()) {
    const runs = await engine.listRuns({ flow });
    const shown = await Promise.all(
      runs.map(async (r) => ({ ...r, steps: Object.fromEntries((await engine.getSteps(r.id)).map((s) => [s.step, s])) })),
    );
    const matching = shown.filter((r) => match(want, r).length === 0);
    if (count === undefined ? matching.length > 0 : matching.length === count) continue;
    const closest = shown.length > 0 ? match(want, shown[0]) : [];
    out.push({
      path: `runs[${i}]`,
      expected: { flow, count: count ?? 'at least 1', ...want },
      actual: `${matching.length} of the ${runs.length} run(s) of ${flow} match`,
      note: closest.length > 0 ? `e.g. at ${closest[0]!.path}: ${JSON.stringify(closest[0]!.actual)}` : undefined,
    });
  }
  return out;
}
