import { loadConfig } from '../../runtime/frontend.js';
import { createRuntime } from '../../runtime/runtime.js';
import { startItemWorkers } from '../../runtime/bullmq/workers.js';
import { parseCommand, parsePositiveInt } from '../args.js';
import { UsageError } from '../exit-codes.js';
import { cliReporter, configOptions, type Io } from '../output.js';
import { stopExitCode, untilSignal } from '../signals.js';

/**
 * `msgflow worker`: works forEach items and steps from the BullMQ queues
 * until a stop signal; items in progress finish (and are recorded) before it
 * exits, steps in progress go back to the queue.
 */
export async function worker(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('worker', argv, false);
  const concurrency = parsePositiveInt(values.concurrency, '--concurrency') ?? 8;
  const file = values.config ?? 'config.yaml';
  const config = loadConfig(file, configOptions(io));
  if (config.executor.driver !== 'bullmq') {
    throw new UsageError(
      `msgflow worker needs executor: { driver: bullmq } in ${config.file} (the executor is '${config.executor.driver}': items run in the process that runs the flow)`,
    );
  }
  // Listening before the queues open: a signal during start-up is not lost.
  const stopped = untilSignal();
  const runtime = await createRuntime({ config, command: 'worker', redactor: io.redactor });
  const reporter = cliReporter(io, values, config, runtime.bus, { tty: false });
  try {
    const workers = await startItemWorkers({ runtime, concurrency, logger: reporter.logger });
    io.out(
      `msgflow: worker ready (pid ${process.pid}): ${workers.identities.length} instance queue(s), ${concurrency} items at once each. Ctrl-C stops.`,
    );
    const signal = await stopped;
    io.err(`msgflow: ${signal}: stopping; items in progress finish first`);
    await workers.close();
    return stopExitCode(signal);
  } finally {
    await runtime.close();
    reporter.close();
  }
}
