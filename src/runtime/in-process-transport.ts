/**
 * A Transport (src/client/transport.ts) that calls the local service
 * directly: `apiUrl: local` with no socket, and the same path, validation and
 * logic as HTTP. Bodies are serialized and parsed as over the wire so both
 * paths see exactly the same JSON.
 */
import { NetworkError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER } from '../api/redact.js';
import { encodeUpload, type Transport, type TransportRequest, type TransportResponse } from '../client/transport.js';
import type { LocalService } from '../local/service.js';
import { isFileBody } from '../local/types.js';

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
      const json = req.body === undefined ? undefined : JSON.stringify(req.body);
      const call = service.handle({
        httpMethod: req.httpMethod,
        path: req.pathParams
          ? `${pathOf(req.method)}${req.pathParams.map((p) => `/${encodeURIComponent(p)}`).join('')}`
          : pathOf(req.method),
        query: req.query,
        headers: upload?.headers ?? (json === undefined ? {} : { 'content-type': 'application/json' }),
        body: upload?.body ?? json,
        ...(req.signal ? { signal: req.signal } : {}),
      });
      const answer = await withDeadline(call, req, watch);
      const headers: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(answer.headers)) headers[k.toLowerCase()] = v;
      // API methods never answer with a file; if one ever did, close it rather than leak its handle.
      if (isFileBody(answer.body)) (answer.body.stream as unknown as { destroy?: () => void }).destroy?.();
      // An empty answer (sendTyping) is no body at all, as the HTTP transport reads it.
      const body = isFileBody(answer.body)
        ? ''
        : answer.body === undefined
          ? undefined
          : (JSON.parse(JSON.stringify(answer.body)) as unknown);
      return { statusCode: answer.status, headers, body };
    },
  };
}

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
