/**
 * The dashboard's HTTP plumbing shared by the server and its routes: the
 * security headers every answer carries, JSON answers (scrubbed of secrets),
 * request bodies and path segments.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MsgflowError } from '../api/errors.js';
import { nestedDeeperThan, readBodyLimited, refuseBody, tooDeepReason } from '../util/http-body.js';

export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // Scripts only from this server: an injected <script> would not run even if escaping failed.
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

export const MAX_BODY = 1 << 20;

/** Answers already serialised (and scrubbed) JSON text. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

/** Answers `body` as JSON, its text through `scrub` (the runtime's redactor: no token or instance id leaves). */
export function sendJson(res: ServerResponse, status: number, body: unknown, scrub: (text: string) => string): void {
  sendText(res, status, scrub(JSON.stringify(body)));
}

/** A URL path segment, decoded; a malformed one is the client's error, not a 500. */
export function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new MsgflowError('UI_BAD_REQUEST', { field: 'path', reason: `'${s}' is not a valid URL path segment` });
  }
}

/** 413 for a body over 1 MiB, written before the connection closes (see refuseBody). */
export function refuseLargeBody(req: IncomingMessage, res: ServerResponse): void {
  const err = new MsgflowError('PAYLOAD_TOO_LARGE', { limit: MAX_BODY });
  const text = JSON.stringify({ error: { code: err.code, message: err.message } });
  refuseBody(req, res, 413, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }, text);
}

/**
 * The request's JSON body (undefined when empty), at most 1 MiB and 64
 * levels deep; undefined too when it was too large and `res` has been
 * answered 413 (the handler then has nothing left to do).
 */
export async function readBody(req: IncomingMessage, res: ServerResponse): Promise<{ value: unknown } | undefined> {
  const raw = await readBodyLimited(req, MAX_BODY);
  if (raw === 'too-large') {
    refuseLargeBody(req, res);
    return undefined;
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return { value: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new MsgflowError('UI_BAD_REQUEST', { field: 'body', reason: `not valid JSON (${(e as Error).message})` });
  }
  if (nestedDeeperThan(value)) throw new MsgflowError('UI_BAD_REQUEST', { field: 'body', reason: tooDeepReason() });
  return { value };
}
