import type { ApiMethod, HttpMethod } from '../api/methods.js';

/**
 * How the client reaches an instance. The HTTP transport (got) and the
 * in-process transport of the local service both implement it, so that
 * validation, retries, rate limiting and error mapping are written once in the
 * client and every conformance test runs over both.
 */
export interface TransportRequest {
  method: ApiMethod;
  httpMethod: HttpMethod;
  /** JSON body for POST. */
  body?: unknown;
  /** Query string for GET (lastOutgoingMessages' `minutes`). */
  query?: Record<string, string>;
  /** Path segments after the token (deleteNotification's receiptId), not yet encoded. */
  pathParams?: string[];
  /** Per-attempt timeout, ms. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface TransportResponse {
  statusCode: number;
  /** Lower-case header names. */
  headers: Record<string, string | undefined>;
  /** Parsed JSON when the body was JSON, else the raw text. */
  body: unknown;
}

export interface Transport {
  /**
   * Sends one attempt. Resolves with whatever status the service answered;
   * rejects only with a NetworkError (no answer), which says whether the
   * request may have reached the server, or, when `signal` was aborted, with
   * the signal's reason.
   */
  request(req: TransportRequest): Promise<TransportResponse>;
  /**
   * Readies what a request needs before it can leave (the HTTP transport
   * loads got): the client calls it before CallOptions.beforeSend, so that a
   * request goes out as soon as that claim is taken, not after a module load.
   */
  prepare?(): Promise<void>;
  /** Where it points, secrets redacted: e.g. `http://127.0.0.1:7070/waInstance<INSTANCE_ID>`. */
  readonly description: string;
  close?(): Promise<void>;
}
