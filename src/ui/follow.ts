/**
 * `GET /api/events?flow=NAME`: the engine's own events of a flow's runs, one
 * by one and unthrottled, for a `msgflow run` that handed its run to the
 * daemon: re-emitted on the terminal's bus, they drive the same progress
 * bars and log lines as a run in that process. (The pages use the coalesced
 * stream of events.ts instead.)
 *
 * Each event is `event: bus` with `data: { "name": "step:started", "event": { ... } }`.
 */
import type { ServerResponse } from 'node:http';
import type { EngineBus, EngineEventName } from '../engine/events.js';

/** The events that belong to one run (they carry `runId` and `flow`; log lines in their fields). */
export const RUN_SCOPED_EVENTS: readonly EngineEventName[] = [
  'run:started',
  'run:finished',
  'run:failed',
  'run:waiting',
  'run:resumed',
  'run:interrupted',
  'step:started',
  'step:finished',
  'step:retry',
  'step:progress',
  'item:finished',
  'action:event',
  'log',
];

/** The flow an event is about: its own `flow`, or a log line's `fields.flow`. */
function flowOf(name: EngineEventName, e: Record<string, unknown>): unknown {
  if (name !== 'log') return e.flow;
  const fields = e.fields as Record<string, unknown> | undefined;
  return fields?.flow;
}

/** Streams the flow's events to `res` until the client goes away or `close` is called; answers that close. */
export function followFlow(bus: EngineBus, res: ServerResponse, flow: string, scrub: (t: string) => string): () => void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  // The first bytes tell the client it is subscribed: it may start the run now without missing run:started.
  res.write(`: following ${JSON.stringify(flow).replace(/\n/g, ' ')}\n\n`);
  const listeners = RUN_SCOPED_EVENTS.map((name) => {
    const fn = (e: Record<string, unknown>) => {
      if (flowOf(name, e) !== flow) return;
      res.write(`event: bus\ndata: ${scrub(JSON.stringify({ name, event: e }))}\n\n`);
    };
    bus.on(name, fn as never);
    return [name, fn] as const;
  });
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  heartbeat.unref?.();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const [name, fn] of listeners) bus.off(name, fn as never);
    res.end();
  };
  res.on('close', close);
  return close;
}
