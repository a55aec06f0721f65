/**
 * The seam between the local service and whatever carries requests to it:
 * node:http (http-server.ts) or a direct call (runtime/in-process-transport.ts). Every
 * rule (auth, routing, method check, JSON parsing, validation, rate limits)
 * lives below `handle`, so both paths behave identically.
 *
 * The answers every route builds (json, errorResponse) live here with LocalResponse.
 */
import type { MsgflowError, ValidationError } from '../api/errors.js';

/** One request as the service sees it, transport-neutral. */
export interface LocalRequest {
  /** `GET`, `POST`, ... as sent (any case). */
  httpMethod: string;
  /** Path below the base URL, starting with `/`, without the query string, still URL-encoded. */
  path: string;
  /** Query parameters (first value of each). */
  query?: Record<string, string | undefined>;
  /** Lower-case header names. */
  headers?: Record<string, string | string[] | undefined>;
  /** Raw body; undefined or empty when none was sent. */
  body?: Buffer | string;
  /**
   * A JSON body as the service would parse it from `body` (the in-process
   * transport's copy, src/util/json-copy.ts): taken instead of `body`, under
   * the same Content-Type and depth checks. Undefined when none was sent.
   */
  json?: unknown;
  /** Aborted when the caller gave up (the HTTP client went away): a long poll ends early. */
  signal?: AbortSignal;
}

/** A file answer (downloadUrl): streamed by the HTTP adapter. */
export interface LocalFileBody {
  kind: 'file';
  stream: NodeJS.ReadableStream;
  size: number;
  mimeType: string;
  fileName: string;
}

export interface LocalResponse {
  status: number;
  /** Header names as they should be sent; always includes content-type. */
  headers: Record<string, string>;
  /** A JSON value, or a file. */
  body: unknown;
}

export function isFileBody(body: unknown): body is LocalFileBody {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'file' && 'stream' in body;
}

export const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json; charset=utf-8' });

/**
 * A JSON answer. Without extra headers it carries the one frozen
 * {@link JSON_HEADERS} object rather than a copy per answer: nothing below
 * `handle` changes an answer's headers once made.
 */
export function json(status: number, body: unknown, headers?: Record<string, string>): LocalResponse {
  return { status, headers: headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers }, body };
}

/** `{message}` with the catalogue's status and text. */
export function errorResponse(e: MsgflowError, headers?: Record<string, string>): LocalResponse {
  return json(e.status ?? 400, { message: e.message }, headers);
}

/** Validation errors of the service: 400 `{message}`, or `{status:false, reason}` for checkAccount's target rule. */
export function validationResponse(e: ValidationError): LocalResponse {
  if (e.code === 'CHECK_ACCOUNT_TARGET') return json(e.status ?? 400, { status: false, reason: e.message });
  return errorResponse(e);
}
