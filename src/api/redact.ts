/**
 * Secrets never leave msgflow in clear: the instance token and id are written
 * `<API_TOKEN>` and `<INSTANCE_ID>` in every message, log line and URL.
 */
export const TOKEN_PLACEHOLDER = '<API_TOKEN>';
export const INSTANCE_PLACEHOLDER = '<INSTANCE_ID>';

export interface Secrets {
  idInstance?: string | number;
  apiTokenInstance?: string;
}

/**
 * Shorter values are not treated as secrets: replacing every "0" of a text
 * because an example config used id 0 would garble all output, and no real
 * instance id or token is that short.
 */
export const MIN_SECRET_LENGTH = 4;

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Replaces every occurrence of the token and the instance id in `text`. The
 * id is replaced only as a whole number (not inside a longer run of digits),
 * so timestamps and counts that happen to contain it stay readable.
 */
export function redact(text: string, secrets: Secrets): string {
  let out = text;
  const token = secrets.apiTokenInstance;
  if (token && token.length >= MIN_SECRET_LENGTH) {
    out = out.split(token).join(TOKEN_PLACEHOLDER);
    const encoded = encodeURIComponent(token);
    if (encoded !== token) out = out.split(encoded).join(TOKEN_PLACEHOLDER);
  }
  const id = secrets.idInstance === undefined ? '' : String(secrets.idInstance);
  if (id.length >= MIN_SECRET_LENGTH) {
    out = out.replace(new RegExp(`(?<![0-9])${escapeRe(id)}(?![0-9])`, 'g'), INSTANCE_PLACEHOLDER);
  }
  return out;
}

/** The path of a method call with the secrets written as placeholders. */
export function redactedPath(method: string): string {
  return `/waInstance${INSTANCE_PLACEHOLDER}/${method}/${TOKEN_PLACEHOLDER}`;
}
