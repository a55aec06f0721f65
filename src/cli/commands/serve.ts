import { serveCommand } from '../../runtime/serve.js';
import { parse, parsePort } from '../args.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { untilSignal } from '../signals.js';

/** `msgflow serve`: the local service over HTTP until SIGINT/SIGTERM. */
export async function serve(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { config: { type: 'string', short: 'c' }, port: { type: 'string', short: 'p' } }, false);
  const handle = await serveCommand({ config: values.config, port: parsePort(values.port), print: (l) => io.out(l) });
  const signal = await untilSignal();
  io.err(`msgflow: ${signal}: closing the local service`);
  await handle.close();
  return EXIT.OK;
}
