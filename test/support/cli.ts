/**
 * `msgflow` in this process, through runCli with the project folder as its
 * working directory and its output captured as the process would print it
 * (the same Io code: secrets scrubbed). Spawn (./spawn.ts) only where the
 * process itself is the subject.
 */
import { Writable } from 'node:stream';
import { runCli } from '../../src/cli/main.js';
import { streamIo, type Io } from '../../src/cli/output.js';

export interface CliResult {
  /** The exit code (a spawned process killed by a signal has none). */
  code: number | null;
  stdout: string;
  stderr: string;
}

function sink(onText: (t: string) => void): Io['stdout'] {
  return Object.assign(
    new Writable({
      write(chunk, _enc, done) {
        onText(String(chunk));
        done();
      },
    }),
    { isTTY: false },
  );
}

/** An Io that records what a command prints, through the same code as the process's (secrets scrubbed). */
export function captureIo(where: Pick<Io, 'cwd' | 'env'> = {}): Io & { stdoutText(): string; stderrText(): string } {
  let stdout = '';
  let stderr = '';
  const io = streamIo(
    sink((t) => (stdout += t)),
    sink((t) => (stderr += t)),
    where,
  );
  return { ...io, stdoutText: () => stdout, stderrText: () => stderr };
}

/**
 * Runs `msgflow ARGS` in `cwd` (relative paths, config.yaml) with `env` over
 * this process's environment.
 *
 * @example
 * const r = await cli(['run', 'greet'], dir);
 * expect(r.code).toBe(0);
 */
export async function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult & { code: number }> {
  const io = captureIo({ cwd, env: { ...process.env, NO_COLOR: '1', ...env } });
  const code = await runCli(args, io);
  return { code, stdout: io.stdoutText(), stderr: io.stderrText() };
}
