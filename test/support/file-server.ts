/**
 * The one test file server: a node:http server on 127.0.0.1:0 standing in for
 * the links sendFileByUrl and the media store fetch. It answers from a route
 * table keyed by path (the query is ignored) that a test may change while the
 * server runs (a fetch that hangs, then finds the file).
 *
 * @example
 * const files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
 * await send({ urlFile: files.url('/doc.pdf') });
 * expect(files.hits).toEqual(['/doc.pdf']);
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Route =
  /** The bytes with a Content-Length (or in 8 kB chunks without one when `chunked`). */
  | { body: Buffer; contentType?: string; status?: number; chunked?: boolean; headers?: Record<string, string> }
  /** A redirect to `redirectTo` (a path of this server or any URL), 302 unless `status`. */
  | { redirectTo: string; status?: number }
  /** Never answers (until the server closes or the route is replaced and asked again). */
  | { hang: true }
  /** Sends the head and a first chunk, then nothing more. */
  | { slowBody: true }
  /** Streams bytes for as long as the client reads them (see endlessBytes). */
  | { endless: true };

export interface FileServer {
  /** `http://127.0.0.1:PORT`, the server's origin. */
  origin: string;
  /** The absolute URL of `path` (which may carry a query) on this server. */
  url(path: string): string;
  /** The route table by path; set or delete entries to change what the server answers. */
  routes: Map<string, Route>;
  /** Paths requested (query stripped), in order. */
  hits: string[];
  /** Request targets as sent (path and query), in order. */
  targets: string[];
  /** Bytes written by `endless` routes so far. */
  endlessBytes(): number;
  close(): Promise<void>;
}

/** Starts a file server answering `routes` (404 for any other path). */
export async function startFileServer(routes: Record<string, Route> = {}): Promise<FileServer> {
  const table = new Map(Object.entries(routes));
  const hits: string[] = [];
  const targets: string[] = [];
  const counter = { endless: 0 };
  const server = createServer((req, res) => {
    const target = req.url ?? '/';
    const p = new URL(target, 'http://x').pathname;
    hits.push(p);
    targets.push(target);
    const route = table.get(p);
    if (!route) res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    else answer(route, res, counter);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (p) => `${origin}${p}`,
    routes: table,
    hits,
    targets,
    endlessBytes: () => counter.endless,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Also ends hanging answers and idle keep-alive sockets, so close() returns at once.
        server.closeAllConnections();
      }),
  };
}

function answer(route: Route, res: ServerResponse<IncomingMessage>, counter: { endless: number }): void {
  if ('hang' in route) return;
  if ('slowBody' in route) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.write(Buffer.alloc(1024, 1));
    return;
  }
  if ('redirectTo' in route) {
    res.writeHead(route.status ?? 302, { location: route.redirectTo }).end();
    return;
  }
  if ('endless' in route) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(16 * 1024, 7);
    const pump = (): void => {
      while (!res.destroyed) {
        counter.endless += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
    return;
  }
  const headers: Record<string, string> = { ...route.headers };
  if (route.contentType !== undefined) headers['content-type'] = route.contentType;
  if (route.chunked) {
    res.writeHead(route.status ?? 200, headers);
    const step = 8 * 1024;
    for (let i = 0; i < route.body.length; i += step) res.write(route.body.subarray(i, i + step));
    res.end();
    return;
  }
  headers['content-length'] = String(route.body.length);
  res.writeHead(route.status ?? 200, headers).end(route.body);
}
