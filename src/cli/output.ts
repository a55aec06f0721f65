import { MsgflowError } from '../api/errors.js';
import { scrub } from '../util/secrets.js';

export { registerSecrets, scrub } from '../util/secrets.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export const processIo: Io = {
  out: (t) => process.stdout.write(scrub(t) + '\n'),
  err: (t) => process.stderr.write(scrub(t) + '\n'),
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
