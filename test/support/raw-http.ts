/**
 * The one raw HTTP/1.1 client of the tests, for what happens on the wire
 * (fetch and node:http would frame, normalise or refuse the request first):
 * bytes written on a fresh socket, then everything the server sends until it
 * closes the connection, resets it, or `until` is satisfied.
 *
 * @example
 * const x = await rawExchange(port, [`POST /hook HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n`]);
 * expect(x.statuses).toEqual([413]);
 */
import net from 'node:net';
import { waitFor } from './wait.js';

export interface RawExchange {
  /** Everything received, as latin1 text. */
  text: string;
  /** The status of each response (and interim `100 Continue`) received, in order. */
  statuses: number[];
  /** How the connection ended: the server closed it, reset it, or it is still open (`until` was satisfied first). */
  ended: 'closed' | 'reset' | 'open';
  /** The body of the last response (after its head). */
  lastBody: string;
}

export interface RawOptions {
  /** Stop reading once this is true of what arrived (the socket is then destroyed). */
  until?: (x: RawExchange) => boolean;
  /** Connect from this local address (another loopback address is another client). */
  localAddress?: string;
  /** Fails after this long without `until` or an end. @default 15000 */
  timeoutMs?: number;
  /** Write the second and later chunks only once this is true of what arrived (e.g. a 100 Continue). */
  before?: (x: RawExchange) => boolean;
}

/** The responses in `text`, one after another: each head, then its body by Content-Length (else to the end). */
function view(text: string, ended: RawExchange['ended']): RawExchange {
  const statuses: number[] = [];
  let lastBody = '';
  let at = 0;
  while (at < text.length) {
    const m = /^HTTP\/1\.1 (\d{3}) /.exec(text.slice(at, at + 13));
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (!m || headEnd < 0) break;
    statuses.push(Number(m[1]));
    const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(at, headEnd));
    const bodyStart = headEnd + 4;
    const bodyEnd = Number(m[1]) < 200 ? bodyStart : length ? bodyStart + Number(length[1]) : text.length;
    lastBody = text.slice(bodyStart, bodyEnd);
    at = bodyEnd;
  }
  return { text, statuses, ended, lastBody };
}

/** Writes `chunks` on a new connection to 127.0.0.1:port and reads the answer (see RawExchange). */
export async function rawExchange(port: number, chunks: Array<string | Buffer>, opts: RawOptions = {}): Promise<RawExchange> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: opts.localAddress });
  let text = '';
  let ended: RawExchange['ended'] | undefined;
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  socket.on('end', () => (ended ??= 'closed'));
  socket.on('close', () => (ended ??= 'closed'));
  socket.on('error', () => (ended ??= 'reset'));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const [first, ...rest] = chunks;
  if (first !== undefined) socket.write(first);
  if (rest.length > 0) {
    if (opts.before) await waitFor('the server before the rest of the request', () => opts.before!(view(text, 'open')) || ended);
    // A server that answered and closed gets no more bytes (writing to it would only raise EPIPE).
    for (const c of rest) if (!ended) socket.write(c);
  }
  try {
    await waitFor('the server to answer', () => ended !== undefined || (opts.until?.(view(text, 'open')) ?? false), {
      timeoutMs: opts.timeoutMs ?? 15_000,
      context: () => text.slice(0, 2000),
    });
  } finally {
    socket.destroy();
  }
  return view(text, ended ?? 'open');
}
