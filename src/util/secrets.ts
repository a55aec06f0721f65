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
