/**
 * The seam between the local service and whatever carries requests to it:
 * node:http (http-server.ts) or a direct call (runtime/in-process-transport.ts). Every
 * rule (auth, routing, method check, JSON parsing, validation, rate limits)
 * lives below `handle`, so both paths behave identically.
 */
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
