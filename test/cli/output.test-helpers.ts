/** Test helper: run the CLI in-process and record its output. */
import type { Io } from '../../src/cli/output.js';

/** An Io that records what a command prints. */
export function captureIo(): Io & { stdoutText: () => string; stderrText: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  const stream = (sink: string[]) => ({ write: (c: string) => (sink.push(String(c)), true), isTTY: false }) as unknown as NodeJS.WritableStream;
  return {
    out: (t) => void out.push(t + '\n'),
    err: (t) => void err.push(t + '\n'),
    stdout: stream(out),
    stderr: stream(err),
    stdoutText: () => out.join(''),
    stderrText: () => err.join(''),
  };
}
