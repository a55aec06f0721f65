import { loadConfig } from '../../config/index.js';
import { createCronScheduler } from '../../engine/schedule/index.js';
import { createLogSubscriber, createProgressReporter } from '../../engine/progress/index.js';
import { createRuntime } from '../../runtime/runtime.js';
import { parse } from '../args.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { untilSignal } from '../signals.js';

/**
 * `msgflow start`: the daemon. Order matters: the local service listens
 * first (flows may call it), then unfinished runs resume, then the scheduler
 * starts (catching up missed slots and startup runs).
 */
export async function start(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { config: { type: 'string', short: 'c' }, 'no-listen': { type: 'boolean' } }, false);
  const config = loadConfig(values.config ?? 'config.yaml');
  const listen = !values['no-listen'] && config.local !== undefined;
  const runtime = await createRuntime({ config, command: 'start', listen });
  const log = createLogSubscriber({ bus: runtime.bus, stream: io.stderr, level: config.logLevel === 'silent' ? 'error' : config.logLevel });
  const progress = createProgressReporter({ bus: runtime.bus, stream: io.stderr, isTTY: false });
  try {
    if (listen) {
      const host = await runtime.local();
      if (host.mode === 'owner' && host.url) io.out(`msgflow: local service listening on ${host.url}`);
    }
    const { flows, errors } = runtime.flows();
    for (const e of errors) io.err(e.message);
    if (errors.length > 0) io.err(`msgflow: ${errors.length} flow error(s); the other flows run (see msgflow validate)`);

    const resumed = await runtime.engine.resumeUnfinished(flows);
    if (resumed.length > 0) io.out(`msgflow: resumed ${resumed.length} unfinished run(s)`);

    const scheduler = createCronScheduler({
      bus: runtime.bus,
      state: runtime.store.kv('scheduler'),
      clock: runtime.clock,
      isBusy: (flow) => runtime.engine.activeRuns().some((r) => r.flow === flow),
    });
    let scheduled = 0;
    for (const flow of flows) {
      if (!flow.on.schedule && !flow.on.startup) continue;
      scheduler.add(flow, async ({ trigger }) => {
        const handle = await runtime.engine.start(flow, { trigger });
        await handle.done;
      });
      scheduled++;
    }
    await scheduler.start();
    for (const s of scheduler.status()) {
      io.out(`msgflow: ${s.flow}: next run ${s.next ? new Date(s.next).toISOString() : "(none)"}${s.timezone ? ` (${s.cron}, ${s.timezone})` : s.cron ? ` (${s.cron})` : ""}`);
    }
    io.out(`msgflow: started; ${scheduled} flow(s) scheduled, ${flows.length} loaded. Ctrl-C stops.`);
    const signal = await untilSignal();
    io.err(`msgflow: ${signal}: stopping; running items finish or are checkpointed`);
    await scheduler.stop();
    return EXIT.OK;
  } finally {
    await runtime.close();
    progress.close();
    log.close();
  }
}
