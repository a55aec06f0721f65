/**
 * `GET /api/events?flow=NAME`: the engine's own events of a flow's runs, one
 * by one, for a `msgflow run` that handed its run to the daemon: re-emitted
 * on the terminal's bus, they drive the same progress bars and log lines as a
 * run in that process. (The pages use the coalesced stream of events.ts
 * instead.)
 *
 * Each event is `event: bus` with `data: { "name": "step:started", "event": { ... } }`.
 * A follower that reads gets every event as it happens; one that does not
 * keeps only the latest `step:progress` of each step while its socket is
 * full, and is disconnected when even that passes the stream's bound (see
 * sse.ts): a stalled follower costs the daemon a bounded amount of memory.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EngineBus, EngineEventName } from '../engine/events.js';
import { LOGGED_EVENTS } from '../engine/progress/log-subscriber.js';
import type { SseStream, SseStreams } from './sse.js';

/** The flow an event is about: its own `flow`, or a log line's `fields.flow`. */
function flowOf(name: EngineEventName, e: Record<string, unknown>): unknown {
  if (name !== 'log') return e.flow;
  const fields = e.fields as Record<string, unknown> | undefined;
  return fields?.flow;
}

/** What a later event replaces while the follower is not reading: a step's progress, by run and step. */
function keyOf(name: EngineEventName, e: Record<string, unknown>): string | undefined {
  return name === 'step:progress' ? `${String(e.runId)}\u0000${String(e.step)}` : undefined;
}

export interface FollowHub {
  /** Streams `flow`'s events to `res` until the client goes away; throws (429, 503) over the stream limits. */
  attach(req: IncomingMessage, res: ServerResponse, flow: string): void;
  readonly clients: number;
  close(): void;
}

/**
 * One set of bus listeners for every follower: an event is serialised once
 * and written to the followers of its flow.
 */
export function createFollowHub(bus: EngineBus, streams: SseStreams, scrub: (t: string) => string): FollowHub {
  const byFlow = new Map<string, Set<SseStream>>();
  let count = 0;
  const listeners = LOGGED_EVENTS.map((name) => {
    const fn = (e: Record<string, unknown>) => {
      const flow = flowOf(name, e);
      const followers = typeof flow === 'string' ? byFlow.get(flow) : undefined;
      if (!followers) return;
      const text = `event: bus\ndata: ${scrub(JSON.stringify({ name, event: e }))}\n\n`;
      const key = keyOf(name, e);
      for (const s of followers) s.send(text, key);
    };
    bus.on(name, fn as never);
    return [name, fn] as const;
  });
  return {
    attach(req, res, flow) {
      // The first bytes tell the client it is subscribed: it may start the run now without missing run:started.
      const first = `: following ${JSON.stringify(flow).replace(/\n/g, ' ')}\n\n`;
      const stream = streams.start(req, res, first, () => {
        const set = byFlow.get(flow);
        if (set?.delete(stream)) count--;
        if (set?.size === 0) byFlow.delete(flow);
      });
      let set = byFlow.get(flow);
      if (!set) byFlow.set(flow, (set = new Set()));
      set.add(stream);
      count++;
    },
    get clients() {
      return count;
    },
    close() {
      for (const [name, fn] of listeners) bus.off(name, fn as never);
      for (const set of byFlow.values()) for (const s of set) s.end();
      byFlow.clear();
      count = 0;
    },
  };
}
