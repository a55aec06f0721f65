import { MsgflowError } from '../../api/errors.js';
import { INSTANCE_PLACEHOLDER, TOKEN_PLACEHOLDER } from '../../api/redact.js';
import { loadConfig } from '../../config/index.js';
import { openLocalHost } from '../../runtime/local-host.js';
import { parse, parsePort } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { registerSecrets, type Io } from '../output.js';
import { untilSignal } from '../signals.js';

/** `msgflow serve`: the local service over HTTP until SIGINT/SIGTERM. */
export async function serve(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { config: { type: 'string', short: 'c' }, port: { type: 'string', short: 'p' } }, false);
  const port = parsePort(values.port);
  const config = loadConfig(values.config ?? 'config.yaml');
  if (!config.local) {
    throw new MsgflowError('USAGE', { reason: `${values.config ?? 'config.yaml'} has no local: section; see README "Local service"` });
  }
  config.local.instances.forEach((i) => registerSecrets(i));
  const host = await openLocalHost(config, { command: 'serve', listen: true, port });
  if (host.mode !== 'owner' || !host.url) throw new Error('unreachable: serve always owns its data');
  io.out(`msgflow local service listening on ${host.url}`);
  config.local.instances.forEach((inst, i) => {
    io.out(
      `  local.instances[${i}] (${inst.state}, send interval ${inst.sendIntervalMs} ms): ` +
        `${host.url}/waInstance${INSTANCE_PLACEHOLDER}/{method}/${TOKEN_PLACEHOLDER}`,
    );
  });
  if (config.local.instances.length === 0) io.out('  no instances declared: add local.instances to the config');
  const signal = await untilSignal();
  io.err(`msgflow: ${signal}: closing the local service`);
  await host.close();
  return EXIT.OK;
}
