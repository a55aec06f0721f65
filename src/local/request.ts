/**
 * Request plumbing shared by the API and admin routes: path parsing, token
 * check, body decoding and error answers. Nothing here knows a method.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { MsgflowError, ValidationError } from '../api/errors.js';
import type { LocalRequest, LocalResponse } from './types.js';
import { nestedDeeperThan, tooDeepReason } from '../util/http-body.js';

export const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json; charset=utf-8' });

export function json(status: number, body: unknown, headers: Record<string, string> = {}): LocalResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body };
}

/** `{message}` with the catalogue's status and text. */
export function errorResponse(e: MsgflowError, headers: Record<string, string> = {}): LocalResponse {
  return json(e.status ?? 400, { message: e.message }, headers);
}

/** Path segments, URL-decoded; undefined when a segment is not valid percent-encoding. */
export function splitPath(p: string): string[] | undefined {
  const parts = p.split('/').filter((s, i, all) => !(s === '' && (i === 0 || i === all.length - 1)));
  try {
    return parts.map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

/** What an instance keeps of its token to check requests against: its SHA-256 digest. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Compares a given token with the expected one's digest in constant time:
 * the given one is hashed first, so the comparison takes the same time
 * whatever its length.
 */
export function tokenMatches(given: string, expected: Buffer): boolean {
  return timingSafeEqual(tokenDigest(given), expected);
}

function header(req: LocalRequest, name: string): string | undefined {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

function bodyText(req: LocalRequest): string {
  if (req.body === undefined) return '';
  return typeof req.body === 'string' ? req.body : req.body.toString('utf8');
}

/**
 * The JSON body of a POST. An empty body is `undefined` (the validator then
 * says the body must be an object); a non-empty one must be declared
 * application/json and parse.
 *
 * @throws MsgflowError UNSUPPORTED_MEDIA_TYPE (415), MALFORMED_JSON (400) or BODY_TOO_DEEP (400)
 */
export function readJsonBody(req: LocalRequest): unknown {
  const text = bodyText(req);
  if (text.trim() === '') return undefined;
  const ct = header(req, 'content-type') ?? '';
  const mediaType = ct.split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(mediaType)) {
    throw new MsgflowError('UNSUPPORTED_MEDIA_TYPE', { got: ct.slice(0, 100) || '(none)' });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // The parser's message can quote the input; keep only its kind, never the body.
    const reason =
      e instanceof SyntaxError
        ? e.message
            .replace(/".*$/s, '')
            .replace(/,?\s*$/, '')
            .slice(0, 120)
        : 'unreadable';
    throw new MsgflowError('MALFORMED_JSON', { reason });
  }
  if (nestedDeeperThan(value)) throw new MsgflowError('BODY_TOO_DEEP', { reason: tooDeepReason() });
  return value;
}

/** Validation errors of the service: 400 `{message}`, or `{status:false, reason}` for checkAccount's target rule. */
export function validationResponse(e: ValidationError): LocalResponse {
  if (e.code === 'CHECK_ACCOUNT_TARGET') return json(e.status ?? 400, { status: false, reason: e.message });
  return errorResponse(e);
}
