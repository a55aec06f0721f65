/**
 * Keeps the instance token and id out of everything the client exposes.
 * Errors of HTTP libraries carry the request URL (with the token in its path)
 * in their options and stack, so they are never attached as `cause`: a plain
 * Error with the same name, code and a redacted message is attached instead.
 */
import { redact, type Secrets } from '../api/redact.js';
import type { ClientLogger } from './options.js';

/** A copy of `err` safe to expose: name, code and message only, secrets redacted. */
export function sanitizedCause(err: unknown, secrets: Secrets): Error {
  const source = err instanceof Error ? err : new Error(String(err));
  const copy = new Error(redact(source.message, secrets));
  copy.name = source.name;
  // The stack names the caller's frames only; it was built from the redacted message.
  copy.stack = `${copy.name}: ${copy.message}`;
  const code = (source as { code?: unknown }).code;
  if (typeof code === 'string') Object.assign(copy, { code });
  return copy;
}

/** A short, redacted excerpt of a text, for error messages about bad answers. */
export function excerpt(text: string, secrets: Secrets, max = 120): string {
  const clean = redact(text, secrets).replace(/\s+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max)}...` : clean;
}

/**
 * Wraps a logger so that no message or string field can carry a secret, even
 * one that reached a log line by an unforeseen path.
 */
export function redactingLogger(logger: ClientLogger | undefined, secrets: Secrets): ClientLogger | undefined {
  if (!logger) return undefined;
  const wrap =
    (level: keyof ClientLogger) =>
    (message: string, fields?: Record<string, unknown>): void => {
      const safe = fields
        ? Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? redact(v, secrets) : v]))
        : undefined;
      logger[level](redact(message, secrets), safe);
    };
  return { debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') };
}
