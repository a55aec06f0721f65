/**
 * A Transport (src/client/transport.ts) that calls the local service
 * directly: `apiUrl: local` with no socket, and the same path, validation and
 * logic as HTTP. Bodies are copied as a trip over the wire would make them
 * (jsonCopy: what JSON.parse(JSON.stringify()) gives, without the text), so
 * both paths see exactly the same JSON and neither side shares an object
 * with the other.
 */
import { NetworkError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER } from '../api/redact.js';
import { encodeUpload, type Transport, type TransportRequest, type TransportResponse } from '../client/transport.js';
import type { LocalService } from '../local/service.js';
import { isFileBody } from '../local/types.js';
import { jsonCopy } from '../util/json-copy.js';

export function createInProcessTransport(
  service: Pick<LocalService, 'handle'>,
  idInstance: string | number,
  apiTokenInstance: string,
): Transport {
  const id = encodeURIComponent(String(idInstance));
  const token = encodeURIComponent(apiTokenInstance);
  // A method's path before its path parameters, made once per method (a bulk job sends a million of one).
  const paths = new Map<string, string>();
  const pathOf = (method: string) => {
    let p = paths.get(method);
    if (p === undefined) paths.set(method, (p = `/waInstance${id}/${encodeURIComponent(method)}/${token}`));
    return p;
  };
  const watch = abortWatch();
  return {
    description: `local (in-process)/waInstance${INSTANCE_PLACEHOLDER}`,
    async request(req: TransportRequest): Promise<TransportResponse> {
      if (req.signal?.aborted) throw new NetworkError(req.method, 'aborted before sending', false, { cause: req.signal.reason });
      const upload = req.upload ? await encodeUpload(req.upload) : undefined;
      const json = req.body === undefined ? undefined : jsonCopy(req.body);
      const call = service.handle({
        httpMethod: req.httpMethod,
        path: req.pathParams
          ? `${pathOf(req.method)}${req.pathParams.map((p) => `/${encodeURIComponent(p)}`).join('')}`
          : pathOf(req.method),
        query: req.query,
        headers: upload?.headers ?? (json === undefined ? NO_HEADERS : JSON_REQUEST_HEADERS),
        ...(upload ? { body: upload.body } : json === undefined ? {} : { json }),
        ...(req.signal ? { signal: req.signal } : {}),
      });
      const answer = await withDeadline(call, req, watch);
      const headers = lowerCased(answer.headers);
      // API methods never answer with a file; if one ever did, close it rather than leak its handle.
      if (isFileBody(answer.body)) (answer.body.stream as unknown as { destroy?: () => void }).destroy?.();
      // An empty answer (sendTyping) is no body at all, as the HTTP transport reads it.
      const body = isFileBody(answer.body) ? '' : answer.body === undefined ? undefined : jsonCopy(answer.body);
      return { statusCode: answer.status, headers, body };
    },
  };
}

/**
 * Header names in lower case, as the HTTP transport reads them. Most answers
 * carry the service's one shared JSON header object: its copy is made once
 * (frozen: one copy serves every call) and kept while that object lives.
 */
// cache: keyed by frozen header objects, whose lower-cased copy cannot change.
const lowerCasedCache = new WeakMap<object, Readonly<Record<string, string | undefined>>>();
function lowerCased(h: Record<string, string>): Record<string, string | undefined> {
  const known = lowerCasedCache.get(h);
  if (known) return known;
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(h)) headers[k.toLowerCase()] = v;
  if (Object.isFrozen(h)) lowerCasedCache.set(h, Object.freeze(headers));
  return headers;
}

// Read, never written, by the service: one object for every call.
const NO_HEADERS = Object.freeze({});
const JSON_REQUEST_HEADERS = Object.freeze({ 'content-type': 'application/json' });

/** Registers what a call does when its signal aborts; returns how to forget it once the call settled. */
type AbortWatch = (signal: AbortSignal, onAbort: () => void) => () => void;

/**
 * One abort listener per signal, however many calls are in flight under it
 * (a bulk job has many under one): an EventTarget listener added and
 * removed per call cost more than the rest of this transport's work.
 */
function abortWatch(): AbortWatch {
  const calls = new WeakMap<AbortSignal, Set<() => void>>();
  return (signal, onAbort) => {
    let under = calls.get(signal);
    if (!under) {
      const set = new Set<() => void>();
      under = set;
      calls.set(signal, set);
      signal.addEventListener('abort', () => [...set].forEach((f) => f()), { once: true });
    }
    const set = under;
    set.add(onAbort);
    return () => void set.delete(onAbort);
  };
}

/** The timeout and abort signal apply as they would to a socket; the work itself may still complete. */
function withDeadline<T>(p: Promise<T>, req: TransportRequest, watch: AbortWatch): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new NetworkError(req.method, `no answer within ${req.timeoutMs} ms`, true, { code: 'TIMEOUT', timeoutMs: req.timeoutMs })),
      req.timeoutMs,
    );
    const forget = req.signal
      ? watch(req.signal, () => {
          clearTimeout(timer);
          reject(new NetworkError(req.method, 'aborted', true, { cause: req.signal?.reason }));
        })
      : undefined;
    p.then(
      (v) => {
        clearTimeout(timer);
        forget?.();
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        forget?.();
        reject(new NetworkError(req.method, e instanceof Error ? e.message : String(e), true, { cause: e }));
      },
    );
  });
}
