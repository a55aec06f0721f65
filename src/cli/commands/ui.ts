import { loadConfig } from '../../config/index.js';
import { createLogSubscriber } from '../../engine/progress/index.js';
import { createRuntime } from '../../runtime/runtime.js';
import { serveDashboard } from '../../ui/index.js';
import { parse, parsePort } from '../args.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { untilSignal } from '../signals.js';

/**
 * `msgflow ui`: the dashboard and API over the project's store, without the
 * scheduler: it shows what a daemon or `msgflow run` records, and a Run now
 * pressed here runs in this process. `stop` ends it (tests); by default
 * SIGINT/SIGTERM do.
 */
export async function ui(argv: string[], io: Io, stop: Promise<unknown> = untilSignal()): Promise<number> {
  const { values } = parse(
    argv,
    { config: { type: 'string', short: 'c' }, port: { type: 'string', short: 'p' }, host: { type: 'string' } },
    false,
  );
  const port = parsePort(values.port);
  const config = loadConfig(values.config ?? 'config.yaml');
  const runtime = await createRuntime({ config, command: 'ui' });
  const log = createLogSubscriber({ bus: runtime.bus, stream: io.stderr, level: config.logLevel === 'silent' ? 'error' : config.logLevel });
  try {
    const server = await serveDashboard(runtime, { port, host: values.host, probeLocal: false });
    io.out(`msgflow: dashboard on ${server.url}${config.ui.token ? ' (state-changing requests need ui.token)' : ''}. Ctrl-C stops.`);
    try {
      await stop;
    } finally {
      await server.close();
    }
    return EXIT.OK;
  } finally {
    await runtime.close();
    log.close();
  }
}
