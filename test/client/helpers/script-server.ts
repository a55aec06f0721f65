/**
 * A real node:http server for client tests: answers from a per-test script
 * and records every request it received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** Parsed JSON body, or undefined when empty or not JSON. */
  body: unknown;
}

/** One scripted answer. */
export type Step =
  | {
      status?: number;
      /** JSON body (serialised); `raw` wins when both are given. */
      json?: unknown;
      raw?: string;
      headers?: Record<string, string>;
    }
  /** Read the request body, then destroy the socket without answering. */
  | { reset: true }
  /** Never answer (the client times out). */
  | { hang: true };

export interface ScriptServer {
  url: string;
  port: number;
  requests: Recorded[];
  /** Queues answers, used in order; when the queue is empty, `fallback` answers. */
  script(...steps: Step[]): void;
  fallback: Step;
  /** Open sockets (kept-alive ones included). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

export async function startScriptServer(port = 0): Promise<ScriptServer> {
  const queue: Step[] = [];
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const u = new URL(req.url ?? '/', 'http://x');
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      requests.push({
        method: req.method ?? '',
        path: u.pathname,
        query: Object.fromEntries(u.searchParams),
        headers: req.headers,
        text,
        body,
      });
      const step = queue.shift() ?? api.fallback;
      if ('reset' in step) return req.socket.destroy();
      if ('hang' in step) return;
      const payload = step.raw ?? (step.json === undefined ? '' : JSON.stringify(step.json));
      res.writeHead(step.status ?? 200, {
        ...(step.raw === undefined && step.json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...step.headers,
      });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  const api: ScriptServer = {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    requests,
    script: (...steps) => queue.push(...steps),
    fallback: { status: 500, json: { message: 'no scripted answer' } },
    connections: () => new Promise((resolve, reject) => server.getConnections((e, n) => (e ? reject(e) : resolve(n)))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}

/** A port on 127.0.0.1 with nothing listening (just released by the OS). */
export async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
