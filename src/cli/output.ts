import path from 'node:path';
import type { EngineBus } from '../engine/events.js';
import type { CliReporter } from '../engine/progress/cli-reporter.js';
import { createCliReporter, MsgflowError, Redactor, escapeControl } from '../runtime/present.js';
import type { OutputStream } from '../engine/progress/progress-reporter.js';
import { parseLogLevel, type CliLogLevel } from './args.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /**
   * Where relative paths on the command line (`--config`, FILE arguments)
   * resolve: a test or an embedding program runs the CLI in-process for
   * another project folder without changing the process's directory.
   * @default process.cwd()
   */
  cwd?: string;
  /** The environment `${VAR}` in config.yaml and `MSGFLOW_DEBUG` read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * What this invocation hides in everything it prints: `out`/`err` scrub
   * with it, and the runtime a command builds adds its tokens and instance
   * ids to it. @default none (a command's runtime then has its own)
   */
  redactor?: Redactor;
}

/** A command-line path resolved against the command's working directory (see {@link Io.cwd}). */
export function cliPath(io: Pick<Io, 'cwd'>, p: string): string {
  return path.resolve(io.cwd ?? process.cwd(), p);
}

/** How a command loads config.yaml: in its working directory, with its environment. */
export function configOptions(io: Pick<Io, 'cwd' | 'env'>): { cwd?: string; env?: NodeJS.ProcessEnv } {
  return { cwd: io.cwd, env: io.env };
}

/** Streams whose reader went away (`msgflow schema | head`): further writes are dropped. */
// cache: keyed by the stream object itself (process.stdout/stderr are one per process by nature); only that stream's own EPIPE marks it
const closedPipes = new WeakSet<object>();
/** Streams whose EPIPE is already handled: however many invocations share a stream, it gets one listener. */
// cache: keyed by the stream object itself, as closedPipes
const guardedStreams = new WeakSet<object>();

/**
 * A reader that closes the pipe early (`| head`) is normal use, not a crash:
 * the EPIPE is noted and later output to that stream dropped, so the command
 * ends quietly with its own exit code (a running flow is not killed by it).
 */
export function guardStdio(streams: NodeJS.WritableStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    if (guardedStreams.has(stream)) continue;
    guardedStreams.add(stream);
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

/**
 * An Io over two streams that prints as the process does (secrets scrubbed
 * with its own redactor, control characters shown rather than obeyed, a
 * closed pipe dropped): what `msgflow` uses for stdout/stderr, and what a
 * test or an embedding program gives runCli to capture the same output.
 */
export function streamIo(stdout: Io['stdout'], stderr: Io['stderr'], where: Pick<Io, 'cwd' | 'env'> = {}): Io {
  const redactor = new Redactor();
  return {
    out: (t) => safeWrite(stdout, escapeControl(redactor.scrub(t)) + '\n'),
    err: (t) => safeWrite(stderr, escapeControl(redactor.scrub(t)) + '\n'),
    stdout,
    stderr,
    redactor,
    ...where,
  };
}

/** The Io of one `msgflow` invocation on this process's stdout/stderr (EPIPE handled), with a redactor of its own. */
export function processIo(): Io {
  guardStdio();
  return streamIo(process.stdout, process.stderr);
}

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
    redactor: io.redactor,
    stream: io.stderr as OutputStream,
    level: parseLogLevel(values['log-level'], config?.logLevel),
    json: values['json-logs'] ?? false,
    tty: opts.tty ?? Boolean(io.stderr.isTTY),
  });
}
