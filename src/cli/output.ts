import { MsgflowError } from '../api/errors.js';
import { scrub } from '../util/secrets.js';
import type { EngineBus } from '../engine/events.js';
import { createCliReporter, type CliReporter, type OutputStream } from '../engine/progress/index.js';
import { parseLogLevel, type CliLogLevel } from './args.js';

export { registerSecrets, scrub } from '../util/secrets.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Streams whose reader went away (`msgflow schema | head`): further writes are dropped. */
const closedPipes = new WeakSet<object>();
let guarded = false;

/**
 * A reader that closes the pipe early (`| head`) is normal use, not a crash:
 * the EPIPE is noted and later output to that stream dropped, so the command
 * ends quietly with its own exit code (a running flow is not killed by it).
 */
export function guardStdio(streams: NodeJS.WritableStream[] = [process.stdout, process.stderr]): void {
  if (guarded) return;
  guarded = true;
  for (const stream of streams) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') {
        closedPipes.add(stream);
        return;
      }
      throw e;
    });
  }
}

/** Writes unless the stream's reader is gone. */
export function safeWrite(stream: NodeJS.WritableStream, text: string): void {
  if (closedPipes.has(stream) || (stream as { destroyed?: boolean }).destroyed) return;
  stream.write(text);
}

export const processIo: Io = {
  out: (t) => safeWrite(process.stdout, scrub(t) + '\n'),
  err: (t) => safeWrite(process.stderr, scrub(t) + '\n'),
  stdout: process.stdout,
  stderr: process.stderr,
};

/** `msgflow: <message> [CODE]`, one line per error of an aggregate. */
export function formatCliError(e: unknown): string {
  if (e instanceof MsgflowError) {
    const lines = e.message.split('\n');
    return lines.map((l) => `msgflow: ${l}`).join('\n') + ` [${e.code}]`;
  }
  if (e instanceof Error) return `msgflow: ${e.message}`;
  return `msgflow: ${String(e)}`;
}

/**
 * The reporter of a command that shows engine work or logs: progress bars
 * and log lines on stderr, at the level of `--log-level` (else config.yaml's
 * `logLevel`, else info), as JSON lines with `--json-logs`.
 *
 * @example
 * const reporter = cliReporter(io, values, config, runtime.bus);
 * try { ... } finally { reporter.close() }
 */
export function cliReporter(
  io: Io,
  values: { 'log-level'?: string; 'json-logs'?: boolean },
  config?: { logLevel?: CliLogLevel },
  bus?: EngineBus,
  /** `tty: false` for a daemon: plain progress lines even on a terminal. @default io.stderr.isTTY */
  opts: { tty?: boolean } = {},
): CliReporter {
  return createCliReporter({
    bus,
    stream: io.stderr as OutputStream,
    level: parseLogLevel(values['log-level'], config?.logLevel),
    json: values['json-logs'] ?? false,
    tty: opts.tty ?? Boolean(io.stderr.isTTY),
  });
}
