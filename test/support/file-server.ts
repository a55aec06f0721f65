/** A static file server on 127.0.0.1:0 standing in for the links sendFileByUrl fetches. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedFile {
  body: Buffer;
  /** Content-Type header; omitted when undefined. */
  contentType?: string;
  status?: number;
  /** Never answer (until the server closes). */
  hang?: boolean;
}

export interface FileServer {
  url: string;
  files: Map<string, ServedFile>;
  /** Paths requested, in order. */
  hits: string[];
  close(): Promise<void>;
}

export async function startFileServer(files: Record<string, ServedFile> = {}): Promise<FileServer> {
  const map = new Map(Object.entries(files));
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(p);
    const f = map.get(p);
    if (!f) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (f.hang) return;
    // Connection: close — a socket kept alive after the answer would count as
    // work in flight to a VirtualClock (it knows no idle socket) for seconds.
    const headers: Record<string, string | number> = { 'content-length': f.body.length, connection: 'close' };
    if (f.contentType !== undefined) headers['content-type'] = f.contentType;
    res.writeHead(f.status ?? 200, headers).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    files: map,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
