import { loadConfig, serveDashboard } from '../../runtime/frontend.js';
import { createRuntime } from '../../runtime/runtime.js';
import { parseCommand, parsePort } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, cliReporter, type Io } from '../output.js';
import { stopExitCode, untilSignal } from '../signals.js';

/**
 * `msgflow ui`: the dashboard and API over the project's store, without the
 * scheduler: it shows what a daemon or `msgflow run` records, and a Run now
 * pressed here runs in this process. `stop` ends it (tests); by default
 * SIGINT/SIGTERM/SIGHUP do.
 */
export async function ui(argv: string[], io: Io, stop?: Promise<unknown>): Promise<number> {
  const { values } = parseCommand('ui', argv, false);
  const port = parsePort(values.port);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  // Listening for stop signals before the port opens: a signal right after the banner is not lost.
  const failed = new AbortController();
  const stopped = stop ?? untilSignal(failed.signal);
  const runtime = await createRuntime({ config, command: 'ui', redactor: io.redactor }).catch((e: unknown) => {
    failed.abort();
    throw e;
  });
  const reporter = cliReporter(io, values, config, runtime.bus, { tty: false });
  try {
    const server = await serveDashboard(runtime, { port, host: values.host as string | undefined, probeLocal: false }, reporter.logger);
    io.out(`msgflow: dashboard on ${server.url}${config.ui.token ? ' (state-changing requests need ui.token)' : ''}. Ctrl-C stops.`);
    let signal: unknown;
    try {
      signal = await stopped;
    } finally {
      await server.close();
    }
    // `stop` given by a caller (tests) resolves with anything; a stop signal names itself.
    return typeof signal === 'string' ? stopExitCode(signal as NodeJS.Signals) : EXIT.OK;
  } catch (e) {
    failed.abort();
    throw e;
  } finally {
    await runtime.close();
    reporter.close();
  }
}
