/**
 * Request plumbing shared by the API and admin routes: path parsing, token
 * check, body decoding and error answers. Nothing here knows a method.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { MsgflowError, ValidationError } from '../api/errors.js';
import type { LocalRequest, LocalResponse } from './types.js';
import { nestedDeeperThan, tooDeepReason } from '../util/http-body.js';

export const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json; charset=utf-8' });

export function json(status: number, body: unknown, headers?: Record<string, string>): LocalResponse {
  return {
    status,
    headers: headers === undefined ? { 'content-type': JSON_HEADERS['content-type'] } : { ...JSON_HEADERS, ...headers },
    body,
  };
}

/** `{message}` with the catalogue's status and text. */
export function errorResponse(e: MsgflowError, headers?: Record<string, string>): LocalResponse {
  return json(e.status ?? 400, { message: e.message }, headers);
}

/** Path segments, URL-decoded; undefined when a segment is not valid percent-encoding. */
export function splitPath(p: string): string[] | undefined {
  // One empty segment is dropped at each end (the leading '/', a trailing one); any other stays, so '//' is still told apart.
  const parts = p.split('/');
  if (parts[0] === '') parts.shift();
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  // Nearly every path has nothing encoded: no decoding pass then.
  if (!p.includes('%')) return parts;
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

/** How many distinct given tokens a {@link TokenCheck} keeps the digest of. @default 64 */
export const TOKEN_CACHE_SIZE = 64;

/**
 * An instance's token check. Every request carries the token, nearly always
 * the same string, so the digest of a given string is computed once and kept
 * (a bounded map: a client spraying guesses evicts old entries instead of
 * growing it); the comparison itself stays `timingSafeEqual` over two
 * fixed-length digests on every request, so it takes the same time whether
 * the token is right or how much of it is.
 */
export class TokenCheck {
  private readonly expected: Buffer;
  private readonly digests = new Map<string, Buffer>();

  constructor(
    token: string,
    private readonly maxEntries: number = TOKEN_CACHE_SIZE,
  ) {
    this.expected = tokenDigest(token);
  }

  accepts(given: string): boolean {
    let digest = this.digests.get(given);
    if (digest === undefined) {
      digest = tokenDigest(given);
      // Oldest first: a Map iterates in insertion order.
      if (this.digests.size >= this.maxEntries) this.digests.delete(this.digests.keys().next().value!);
      this.digests.set(given, digest);
    }
    return timingSafeEqual(digest, this.expected);
  }
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
