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

/** Replaces every occurrence of the token and the instance id in `text`. */
export function redact(text: string, secrets: Secrets): string {
  let out = text;
  const token = secrets.apiTokenInstance;
  if (token && token.length >= 1) out = out.split(token).join(TOKEN_PLACEHOLDER);
  const id = secrets.idInstance === undefined ? '' : String(secrets.idInstance);
  if (id) out = out.split(id).join(INSTANCE_PLACEHOLDER);
  return out;
}

/** The path of a method call with the secrets written as placeholders. */
export function redactedPath(method: string): string {
  return `/waInstance${INSTANCE_PLACEHOLDER}/${method}/${TOKEN_PLACEHOLDER}`;
}
