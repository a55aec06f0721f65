/**
 * node:http adapter of the local service. It only moves bytes: caps the body
 * (413 before reading it all), hands the request to `service.handle`, writes
 * JSON or streams a file. Every rule lives below `handle`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MsgflowError } from '../api/errors.js';
import type { Logger } from '../util/logger.js';
import { pipeline } from 'node:stream/promises';
import { JSON_HEADERS } from './request.js';
import { isFileBody, type LocalRequest, type LocalResponse } from './types.js';

export interface HttpListener {
  /** e.g. `http://127.0.0.1:7070` */
  url: string;
  port: number;
  server: http.Server;
  close(): Promise<void>;
}

export interface ListenOptions {
  port: number;
  host: string;
  maxBodyBytes: number;
  logger: Logger;
}

interface Handler {
  handle(req: LocalRequest): Promise<LocalResponse>;
}

export async function listenHttp(service: Handler, opts: ListenOptions): Promise<HttpListener> {
  const server = http.createServer((req, res) => void onRequest(service, opts, req, res));
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function onRequest(service: Handler, opts: ListenOptions, req: http.IncomingMessage, res: http.ServerResponse) {
  try {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > opts.maxBodyBytes) return tooLarge(req, res, opts.maxBodyBytes);
    const body = await readBody(req, opts.maxBodyBytes);
    if (body === 'too-large') return tooLarge(req, res, opts.maxBodyBytes);
    const url = new URL(req.url ?? '/', 'http://local');
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) if (!(k in query)) query[k] = v;
    const answer = await service.handle({
      httpMethod: req.method ?? 'GET',
      path: url.pathname,
      query,
      headers: req.headers,
      body,
    });
    send(req, res, answer);
  } catch (e) {
    // handle() never throws; this is a socket-level failure (client went away).
    opts.logger.debug('local service: request aborted', { reason: e instanceof Error ? e.message : String(e) });
    if (!res.headersSent && !res.destroyed) {
      res.writeHead(500, JSON_HEADERS).end(JSON.stringify({ message: new MsgflowError('INTERNAL', { reason: 'request failed' }).message }));
    }
  }
}

function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) {
        done = true;
        req.off('data', onData);
        resolve('too-large');
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!done) reject(e);
    });
  });
}

/** 413, then close the connection: the rest of the body is not worth reading. */
function tooLarge(req: http.IncomingMessage, res: http.ServerResponse, limit: number) {
  const body = JSON.stringify({ message: new MsgflowError('PAYLOAD_TOO_LARGE', { limit }).message });
  res.writeHead(413, { ...JSON_HEADERS, connection: 'close', 'content-length': Buffer.byteLength(body) });
  res.end(body, () => req.socket.destroy());
  // Keep reading (and dropping) until the socket goes, so the client sees the answer rather than a reset.
  req.resume();
}

function send(req: http.IncomingMessage, res: http.ServerResponse, answer: LocalResponse) {
  if (isFileBody(answer.body)) {
    const stream = answer.body.stream;
    res.writeHead(answer.status, answer.headers);
    if (req.method === 'HEAD') {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      res.end();
      return;
    }
    // pipeline (not pipe) destroys the file stream when the client goes away
    // mid-download, so its file handle is closed rather than left to the GC.
    pipeline(stream, res).catch(() => res.destroy());
    return;
  }
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
