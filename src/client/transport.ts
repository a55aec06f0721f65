import type { ApiMethod, HttpMethod } from '../api/methods.js';

/**
 * How the client reaches an instance. The HTTP transport (undici) and the
 * in-process transport of the local service both implement it, so that
 * validation, retries, rate limiting and error mapping are written once in the
 * client and every conformance test runs over both.
 */
export interface TransportRequest {
  method: ApiMethod;
  httpMethod: HttpMethod;
  /** JSON body for POST. */
  body?: unknown;
  /** A file upload (METHOD_SPECS requestBody multipart or binary): sent instead of `body`. */
  upload?: UploadBody;
  /** Query string for GET (lastOutgoingMessages' `minutes`). */
  query?: Record<string, string>;
  /** Path segments after the token (deleteNotification's receiptId), not yet encoded. */
  pathParams?: string[];
  /** Per-attempt timeout, ms. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * A request that carries a file: multipart/form-data with a `file` part and
 * text fields (sendFileByUpload, as the official client sends it), or the
 * file itself as the body with its type and name in headers (uploadFile, as
 * the service documents it). {@link encodeUpload} turns it into bytes.
 */
export type UploadBody =
  | { kind: 'multipart'; fields: Record<string, string>; file: { data: Uint8Array; fileName: string } }
  | { kind: 'binary'; data: Uint8Array; contentType: string; fileName?: string };

/**
 * The bytes and headers of an upload, the same for every transport: the
 * multipart encoding is the platform's (FormData through a Response), and a
 * file name outside ASCII travels percent-encoded in `GA-Filename`.
 */
export async function encodeUpload(u: UploadBody): Promise<{ body: Buffer; headers: Record<string, string> }> {
  if (u.kind === 'binary') {
    const headers: Record<string, string> = { 'content-type': u.contentType };
    if (u.fileName !== undefined) headers['ga-filename'] = headerSafe(u.fileName);
    return { body: Buffer.from(u.data.buffer, u.data.byteOffset, u.data.byteLength), headers };
  }
  const form = new FormData();
  form.append('file', new Blob([u.file.data as Uint8Array<ArrayBuffer>]), u.file.fileName);
  for (const [k, v] of Object.entries(u.fields)) form.append(k, v);
  const encoded = new Response(form);
  return { body: Buffer.from(await encoded.arrayBuffer()), headers: { 'content-type': encoded.headers.get('content-type')! } };
}

/** A header value: printable ASCII as is, anything else percent-encoded (the service decodes it). */
function headerSafe(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
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
   * loads undici): the client calls it before CallOptions.beforeSend, so that a
   * request goes out as soon as that claim is taken, not after a module load.
   */
  prepare?(): Promise<void>;
  /** Where it points, secrets redacted: e.g. `http://127.0.0.1:7070/waInstance<INSTANCE_ID>`. */
  readonly description: string;
  close?(): Promise<void>;
}
