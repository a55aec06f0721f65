import { loadConfig, resolveFromConfig } from '../../config/index.js';
import { findFlow } from '../../engine/flow/index.js';
import { createLogSubscriber, createProgressReporter } from '../../engine/progress/index.js';
import { createRuntime } from '../../runtime/runtime.js';
import type { RunRecord } from '../../store/types.js';
import { parse, parseInputs } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import type { Io } from '../output.js';
import { formatRunSummary } from '../run-format.js';

/**
 * `msgflow run FLOW`: runs a flow now and waits for it. When an earlier run
 * of the same flow was cut short (kill -9, Ctrl-C), it is resumed from its
 * checkpoint instead of starting over, unless `--new` is given.
 */
export async function run(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, {
    config: { type: 'string', short: 'c' },
    input: { type: 'string', short: 'i', multiple: true },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
    new: { type: 'boolean' },
  });
  if (positionals.length !== 1) throw new UsageError(`run expects exactly one FLOW, got ${positionals.length}`);
  const inputs = parseInputs(values.input);
  const config = loadConfig(values.config ?? 'config.yaml');
  const runtime = await createRuntime({ config, command: 'run', listenIfFree: true });
  const isTTY = Boolean(io.stderr.isTTY);
  const progress = createProgressReporter({ bus: runtime.bus, stream: io.stderr, isTTY });
  // On a terminal the bar owns stderr: only warnings and errors are logged over it.
  const log = createLogSubscriber({ bus: runtime.bus, stream: io.stderr, level: isTTY ? 'warn' : 'info' });
  const stop = () => void runtime.engine.shutdown('interrupted by signal');
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const flow = findFlow(resolveFromConfig(config, config.flowsDir), positionals[0]!, {
      registry: runtime.registry,
      baseDir: config.baseDir,
      instances: Object.keys(config.instances),
    });
    let handle;
    if (!values.new && !values['dry-run']) {
      const resumed = await runtime.engine.resumeUnfinished([flow]);
      if (resumed.length > 0) {
        io.err(`msgflow: resuming run ${resumed[0]!.runId} of ${flow.name} from its checkpoint (--new starts a fresh run)`);
        // resumeUnfinished lists the oldest first: that one is reported on;
        // any later unfinished runs of this flow are resumed and awaited too.
        await Promise.all(resumed.slice(1).map((h) => h.done));
        handle = resumed[0]!;
      }
    }
    handle ??= await runtime.engine.start(flow, { inputs, dryRun: values['dry-run'] ?? false, trigger: 'manual' });
    const record: RunRecord = await handle.done;
    progress.close();
    log.close();
    if (values.json) {
      const steps = await runtime.engine.getSteps(record.id);
      io.out(JSON.stringify({ run: record, steps }, null, 2));
    } else {
      io.out(formatRunSummary(record, await runtime.engine.getSteps(record.id)));
    }
    return record.status === 'succeeded' ? EXIT.OK : EXIT.FAILURE;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    progress.close();
    log.close();
    await runtime.close();
  }
}
