/**
 * Server-sent event streams of the dashboard, with their limits: how many a
 * client address and the server may hold open, and how much a stream may
 * hold unsent. Both streams (the pages' coalesced one, events.ts, and the
 * engine events of one flow, follow.ts) write through here.
 *
 * A client that reads keeps up and gets every event. A client that does not
 * read (or reads slower than events come) fills its socket: once the bytes
 * unsent pass `highWater`, events are held back instead of written, an event
 * with a key (step progress, a run's summary) replacing the held-back one of
 * the same key; once what is held back passes `maxPending`, the client is
 * disconnected. So a stream holds at most `highWater + maxPending` bytes
 * (plus one event) in the server, whatever the run.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MsgflowError } from '../api/errors.js';
import { SECURITY_HEADERS } from './http.js';

export interface SseLimits {
  /** Event streams one client address may hold open. @default 32 */
  perClient?: number;
  /** Event streams the server holds open in all. @default 256 */
  total?: number;
  /** Bytes written but not yet sent past which a stream's events are held back (and coalesced). @default 65536 */
  highWater?: number;
  /** Bytes of events held back past which the client is disconnected. @default 262144 */
  maxPending?: number;
}

export const SSE_DEFAULTS: Required<SseLimits> = { perClient: 32, total: 256, highWater: 64 * 1024, maxPending: 256 * 1024 };

/** One open stream. */
export interface SseStream {
  /**
   * Writes one event (its full text, `event: ...\ndata: ...\n\n`), or holds it
   * back while the client is not reading; `key` names what a later event of
   * the same key replaces (the latest progress of a step is all that matters).
   */
  send(text: string, key?: string): void;
  /** Bytes of this stream the server holds: unsent in the socket plus held back. */
  readonly buffered: number;
  /** Ends the stream (the client sees its end). */
  end(): void;
}

interface Held {
  text: string;
  key?: string;
}

class Stream implements SseStream {
  private held: Held[] = [];
  private heldBytes = 0;
  private readonly heldKeys = new Map<string, Held>();
  private waitingDrain = false;
  closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly limits: Required<SseLimits>,
  ) {}

  get buffered(): number {
    return this.res.writableLength + this.heldBytes;
  }

  send(text: string, key?: string): void {
    if (this.closed) return;
    if (this.held.length === 0 && this.res.writableLength < this.limits.highWater) {
      this.res.write(text);
      return;
    }
    const prev = key === undefined ? undefined : this.heldKeys.get(key);
    if (prev) {
      this.heldBytes += text.length - prev.text.length;
      prev.text = text;
    } else {
      const h: Held = { text, key };
      this.held.push(h);
      if (key !== undefined) this.heldKeys.set(key, h);
      this.heldBytes += text.length;
    }
    if (this.heldBytes > this.limits.maxPending) {
      // Never buffered without bound: a client this far behind starts again (EventSource reconnects).
      this.drop();
      return;
    }
    if (!this.waitingDrain) {
      this.waitingDrain = true;
      this.res.once('drain', this.flush);
    }
  }

  /** A comment line that keeps proxies from closing an idle stream; skipped while the client is not reading. */
  heartbeat(): void {
    if (!this.closed && this.held.length === 0 && this.res.writableLength < this.limits.highWater) this.res.write(': keep-alive\n\n');
  }

  private readonly flush = () => {
    this.waitingDrain = false;
    if (this.closed) return;
    const held = this.held;
    this.held = [];
    this.heldKeys.clear();
    this.heldBytes = 0;
    if (held.length > 0) this.res.write(held.map((h) => h.text).join(''));
  };

  private drop(): void {
    this.closed = true;
    this.held = [];
    this.heldKeys.clear();
    this.heldBytes = 0;
    this.res.destroy();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }
}

/** The open streams of one server, with its limits. */
export class SseStreams {
  private readonly limits: Required<SseLimits>;
  private readonly open = new Set<Stream>();
  private readonly byClient = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    limits: SseLimits = {},
    private readonly heartbeatMs = 15_000,
  ) {
    this.limits = { ...SSE_DEFAULTS, ...limits };
  }

  get size(): number {
    return this.open.size;
  }

  /** What each open stream holds in the server, in bytes (for tests and metrics). */
  buffered(): number[] {
    return [...this.open].map((s) => s.buffered);
  }

  /**
   * Starts a stream on `res` (status, headers and `first`, a comment line),
   * or refuses it: 429 when the client's address holds `perClient` streams,
   * 503 when the server holds `total`.
   */
  start(req: IncomingMessage, res: ServerResponse, first: string, onClose: () => void): SseStream {
    const client = req.socket.remoteAddress ?? 'unknown';
    const mine = this.byClient.get(client) ?? 0;
    if (mine >= this.limits.perClient) throw new MsgflowError('UI_STREAMS_PER_CLIENT', { limit: this.limits.perClient });
    if (this.open.size >= this.limits.total) throw new MsgflowError('UI_STREAMS_FULL', { limit: this.limits.total });
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(first);
    const stream = new Stream(res, this.limits);
    this.open.add(stream);
    this.byClient.set(client, mine + 1);
    res.on('close', () => {
      stream.closed = true;
      this.open.delete(stream);
      const n = (this.byClient.get(client) ?? 1) - 1;
      if (n > 0) this.byClient.set(client, n);
      else this.byClient.delete(client);
      if (this.open.size === 0 && this.heartbeat) {
        clearInterval(this.heartbeat);
        this.heartbeat = undefined;
      }
      onClose();
    });
    this.heartbeat ??= setInterval(() => {
      for (const s of this.open) s.heartbeat();
    }, this.heartbeatMs);
    this.heartbeat.unref?.();
    return stream;
  }

  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const s of this.open) s.end();
  }
}
