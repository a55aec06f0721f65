/**
 * The HTTP transport: one attempt of one call, over got. It only moves bytes
 * and says whether the server may have seen the request; retries, rate
 * limiting and the meaning of statuses belong to the client core.
 */
import http from 'node:http';
import https from 'node:https';
import type { Got, RequestError } from 'got';
import { NetworkError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER, type Secrets } from '../api/redact.js';
import { sanitizedCause } from './sanitize.js';
import { encodeUpload, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

export interface HttpTransportOptions {
  /** Base URL of the service, e.g. `https://api.example.com` (trailing slashes ignored). */
  apiUrl: string;
  idInstance: string | number;
  apiTokenInstance: string;
  /** @default 'msgflow' */
  userAgent?: string;
}

/**
 * Errors after which the request certainly did not reach the server: nothing
 * listened, or the host name did not resolve. Anything else (reset, timeout,
 * TLS failure mid-way) may have been processed, so a non-idempotent call must
 * not be repeated after it.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Creates the got-based transport.
 *
 * @example
 * const transport = createHttpTransport({ apiUrl, idInstance, apiTokenInstance });
 * transport.description; // 'https://api.example.com/waInstance<INSTANCE_ID>'
 */
export function createHttpTransport(opts: HttpTransportOptions): Transport {
  const base = opts.apiUrl.replace(/\/+$/, '');
  const id = String(opts.idInstance);
  const secrets: Secrets = { idInstance: id, apiTokenInstance: opts.apiTokenInstance };
  // Own agents, so that close() frees the kept-alive sockets and a process
  // using the client can exit. LIFO: the socket used last is reused first, so
  // a lull lets the others time out instead of keeping every one warm.
  const agent = {
    http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
    https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
  };
  // Everything that is the same on every call, merged once: got normalises
  // the options of each call, and the fewer it is given the less it does.
  let client: Got | undefined;
  const clientOf = async () =>
    (client ??= (await loadGot()).got.extend({
      headers: { accept: 'application/json', 'user-agent': opts.userAgent ?? 'msgflow' },
      retry: { limit: 0 },
      throwHttpErrors: false,
      // A redirect is not part of the API; following it would send the
      // token in the path to wherever the Location header points.
      followRedirect: false,
      responseType: 'text',
      agent,
    }));

  async function request(req: TransportRequest): Promise<TransportResponse> {
    const tail = (req.pathParams ?? []).map((p) => `/${encodeURIComponent(p)}`).join('');
    const url = `${base}/waInstance${id}/${req.method}/${opts.apiTokenInstance}${tail}`;
    const got = await clientOf();
    const upload = req.upload ? await encodeUpload(req.upload) : undefined;
    try {
      const res = await got(url, {
        method: req.httpMethod,
        json: req.httpMethod === 'POST' && !upload ? (req.body ?? {}) : undefined,
        body: upload?.body,
        searchParams: req.query,
        headers: upload?.headers,
        timeout: { request: req.timeoutMs },
        signal: req.signal,
      });
      const headers: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      return { statusCode: res.statusCode, headers, body: parseBody(res.body) };
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason;
      throw toNetworkError(req, err as RequestError, secrets);
    }
  }

  return {
    request,
    // A fresh process takes a few hundred ms to load got: done before a claim that the request leaves.
    prepare: async () => void (await clientOf()),
    description: `${base}/waInstance${INSTANCE_PLACEHOLDER}`,
    async close() {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
}

/**
 * got, loaded with the first call (then cached by the module system): a
 * process that never calls an instance (validate, runs, the daemon between
 * schedules) starts without got's module tree.
 */
const loadGot = () => import('got');

/** JSON when it parses, the text otherwise, undefined for an empty body. */
function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toNetworkError(req: TransportRequest, err: RequestError, secrets: Secrets): NetworkError {
  const cause = sanitizedCause(err, secrets);
  const code = typeof err?.code === 'string' ? err.code : undefined;
  if (err?.name === 'TimeoutError' || code === 'ETIMEDOUT') {
    return new NetworkError(req.method, 'timeout', true, { code: 'TIMEOUT', timeoutMs: req.timeoutMs, cause });
  }
  const reason = code ? `${code} (${cause.message})` : cause.message;
  return new NetworkError(req.method, reason, !(code !== undefined && NOT_SENT_CODES.has(code)), { cause, systemCode: code });
}
