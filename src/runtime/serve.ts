/**
 * `msgflow serve`: load config.yaml, start the local service over HTTP, print
 * where it listens. A config holding only a `local:` section is enough. The
 * data directory is locked like every other owner's (see local-host.ts), so a
 * second `serve` on the same data fails clearly instead of corrupting it.
 */
import { ConfigError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER, TOKEN_PLACEHOLDER } from '../api/redact.js';
import { loadConfig } from '../config/load.js';
import type { Logger } from '../util/logger.js';
import { escapeControl } from '../util/printable.js';
import type { LocalService } from '../local/service.js';
import type { Clock } from '../util/clock.js';
import { openLocalHost } from './local-host.js';

export interface ServeArgs {
  /** @default ./config.yaml */
  config?: string;
  /** Overrides local.port; 0 picks a free port. */
  port?: number;
  /** Where the startup lines go. @default console.log */
  print?: (line: string) => void;
  logger?: Logger;
  clock?: Clock;
  /** For `${VAR}` in the config. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Where a relative `config` is. @default process.cwd() */
  cwd?: string;
}

export interface ServeHandle {
  url: string;
  service: LocalService;
  close(): Promise<void>;
}

export async function serveCommand(args: ServeArgs = {}): Promise<ServeHandle> {
  const file = args.config ?? 'config.yaml';
  const config = loadConfig(file, { env: args.env, cwd: args.cwd });
  const local = config.local;
  if (!local) {
    throw new ConfigError('CONFIG_INVALID', { location: file, path: 'local', reason: 'msgflow serve needs a local: section' });
  }
  const print = args.print ?? ((line: string) => console.log(line));
  const host = await openLocalHost(config, {
    command: 'serve',
    listen: true,
    port: args.port,
    clock: args.clock,
    logger: args.logger ?? stderrLogger,
  });
  if (host.mode !== 'owner' || !host.url) throw new Error('unreachable: serve always owns its data directory');
  print(`msgflow local service listening on ${host.url}`);
  print(`  paths: ${host.url}/waInstance${INSTANCE_PLACEHOLDER}/{method}/${TOKEN_PLACEHOLDER}`);
  local.instances.forEach((inst, i) => {
    print(
      `  instance ${i + 1}: local.instances[${i}].idInstance / .apiTokenInstance (state ${inst.state}, send interval ${inst.sendIntervalMs} ms)`,
    );
  });
  if (local.instances.length === 0) print('  no instances declared: add local.instances to the config');
  return { url: host.url, service: host.service, close: () => host.close() };
}

/** Warnings and errors of `msgflow serve` (e.g. a file that could not be fetched) go to stderr. */
const stderrLogger: Logger = {
  debug() {},
  info() {},
  warn: (message, fields) => console.error(escapeControl(`warn: ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`)),
  error: (message, fields) => console.error(escapeControl(`error: ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`)),
};
