import { MsgflowError } from '../api/errors.js';
import { redact, type Secrets } from '../api/redact.js';

/**
 * Everything the CLI prints goes through here, so that a token or instance id
 * that slipped into a message (e.g. echoed by a remote service) is still
 * written as <API_TOKEN> / <INSTANCE_ID>.
 */
const secrets: Secrets[] = [];

export function registerSecrets(s: Secrets): void {
  if (s.apiTokenInstance || s.idInstance) secrets.push(s);
}

export function scrub(text: string): string {
  let out = text;
  for (const s of secrets) out = redact(out, s);
  return out;
}

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
