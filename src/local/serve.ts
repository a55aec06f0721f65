/**
 * `msgflow serve`: load config.yaml, start the local service over HTTP, print
 * where it listens. A config holding only a `local:` section is enough.
 */
import { ConfigError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER, TOKEN_PLACEHOLDER } from '../api/redact.js';
import { loadConfig } from '../config/load.js';
import type { Logger } from '../engine/action.js';
import type { Clock } from '../util/clock.js';
import { createLocalService, type LocalService } from './service.js';

export interface ServeArgs {
  /** @default ./config.yaml */
  config?: string;
  /** Overrides local.port; 0 picks a free port. */
  port?: number;
  /** Where the startup lines go. @default console.log */
  print?: (line: string) => void;
  logger?: Logger;
  clock?: Clock;
}

export interface ServeHandle {
  url: string;
  service: LocalService;
  close(): Promise<void>;
}

export async function serveCommand(args: ServeArgs = {}): Promise<ServeHandle> {
  const file = args.config ?? 'config.yaml';
  const config = loadConfig(file);
  const local = config.local;
  if (!local) {
    throw new ConfigError('CONFIG_INVALID', { location: file, path: 'local', reason: 'msgflow serve needs a local: section' });
  }
  const print = args.print ?? ((line: string) => console.log(line));
  const service = createLocalService(local, { baseDir: config.baseDir, logger: args.logger ?? stderrLogger, clock: args.clock });
  await service.start();
  let listener;
  try {
    listener = await service.listen(args.port ?? local.port, local.host);
  } catch (e) {
    await service.close();
    throw e;
  }
  print(`msgflow local service listening on ${listener.url}`);
  print(`  paths: ${listener.url}/waInstance${INSTANCE_PLACEHOLDER}/{method}/${TOKEN_PLACEHOLDER}`);
  local.instances.forEach((inst, i) => {
    print(`  instance ${i + 1}: local.instances[${i}].idInstance / .apiTokenInstance (state ${inst.state}, send interval ${inst.sendIntervalMs} ms)`);
  });
  return {
    url: listener.url,
    service,
    close: () => service.close(),
  };
}

/** Warnings and errors of `msgflow serve` (e.g. a file that could not be fetched) go to stderr. */
const stderrLogger: Logger = {
  debug() {},
  info() {},
  warn: (message, fields) => console.error(`warn: ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`),
  error: (message, fields) => console.error(`error: ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`),
};
