import { TOKEN_PLACEHOLDER } from '../../runtime/present.js';
import { loadConfig } from '../../runtime/frontend.js';
import { serveCommand } from '../../runtime/serve.js';
import { parseCommand, parsePort } from '../args.js';
import { configOptions, cliReporter, type Io } from '../output.js';
import { stopExitCode, untilSignal } from '../signals.js';

/**
 * `msgflow serve`: the local service over HTTP until SIGINT/SIGTERM. The
 * banner names the local instances' ids: they are in config.yaml and only
 * address this machine's demo service, so a user can curl it once they put
 * in the token (never printed: the line says where it is in config.yaml;
 * remote instances' ids are never printed either).
 */
export async function serve(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('serve', argv, false);
  const port = parsePort(values.port);
  const configFile = values.config ?? 'config.yaml';
  const config = loadConfig(configFile, configOptions(io));
  const reporter = cliReporter(io, values, config);
  // Listening for stop signals before the port opens: a signal right after the banner is not lost.
  const failed = new AbortController();
  const stopped = untilSignal(failed.signal);
  let handle;
  try {
    handle = await serveCommand({ config: configFile, ...configOptions(io), port, print: (l) => io.out(l), logger: reporter.logger });
  } catch (e) {
    failed.abort();
    reporter.close();
    throw e;
  }
  // The token is the user's own config value, but no token is ever printed: the line names where to find it.
  for (const [i, inst] of (config.local?.instances ?? []).entries()) {
    io.out(
      `  local instance ${inst.idInstance}: curl ${handle.url}/waInstance${inst.idInstance}/lastOutgoingMessages/${TOKEN_PLACEHOLDER}`,
    );
    io.out(`    with ${TOKEN_PLACEHOLDER} = local.instances[${i}].apiTokenInstance of ${configFile} (tokens are never printed)`);
  }
  const signal = await stopped;
  io.err(`msgflow: ${signal}: closing the local service`);
  await handle.close();
  reporter.close();
  return stopExitCode(signal);
}
