/**
 * `msgflow run FLOW` beside a daemon: when `msgflow start` owns the store and
 * serves its dashboard, the run is handed to it through the HTTP API
 * (`POST /api/flows/:name/runs`, with config.yaml's `ui.token`), so that it
 * executes in the daemon and shows live in the dashboard. The terminal
 * follows it through `GET /api/events?flow=NAME` (the engine's own events,
 * re-emitted on this process's bus: the same progress and log lines as a
 * local run) and reads the final record from the store (the same summary and
 * exit code).
 *
 * The daemon records its dashboard's address in the store when it starts
 * (src/ui/daemon-address.ts). When it serves none (`--no-ui`, a busy port),
 * the run stays in this process, as before the dashboard existed, and the
 * command says why.
 */
import { request, type IncomingMessage } from 'node:http';
import { MsgflowError } from '../api/errors.js';
import type { EngineBus, EngineEventName } from '../engine/events.js';
import { defaultHostId, describeHolder, holderDead } from '../engine/run/ownership.js';
import type { RunHandle } from '../engine/run/types.js';
import type { Runtime } from '../runtime/runtime.js';
import type { RunRecord } from '../store/types.js';
import { isLoopbackHost } from '../ui/safety.js';
import { readDaemonUi } from '../ui/daemon-address.js';

/** How often the store is read for the run's status while following it (a missed or lost event costs this much). */
const STATUS_POLL_MS = 1000;

export interface DaemonTarget {
  /** The dashboard's address, e.g. `http://127.0.0.1:7071`. */
  url: string;
  /** config.yaml's ui.token ('' for none). */
  token: string;
}

/** A run executing in the daemon, followed from here. */
export interface RemoteRunHandle extends RunHandle {
  /** Stops following (the run goes on in the daemon). */
  detach(): void;
}

/**
 * The daemon to hand runs to: a live `msgflow start` on this store with a
 * dashboard reachable from here. Otherwise `note` says why the run stays in
 * this process (undefined when no daemon runs).
 */
export async function findDaemon(runtime: Runtime): Promise<{ target?: DaemonTarget; note?: string }> {
  const lease = await runtime.store.getLease('daemon');
  const hostId = defaultHostId();
  if (!lease || holderDead(lease, hostId)) return {};
  const who = `msgflow start, ${describeHolder(lease)}`;
  const rec = await readDaemonUi(runtime.store);
  if (!rec || rec.pid !== lease.pid || rec.host !== lease.host)
    return { note: `the daemon (${who}) recorded no dashboard address: the run executes here` };
  if (!rec.url) return { note: `the daemon (${who}) serves no dashboard (${rec.reason ?? 'ui off'}): the run executes here` };
  if (rec.host !== hostId && isLoopbackHost(new URL(rec.url).hostname)) {
    return { note: `the daemon (${who}) serves its dashboard on its own host only (${rec.url}): the run executes here` };
  }
  return { target: { url: rec.url, token: runtime.config.ui.token } };
}

interface SseEvent {
  event: string;
  data: string;
}

/** Parses server-sent events out of a response as they arrive. */
function onSse(res: IncomingMessage, each: (e: SseEvent) => void): void {
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) each({ event, data: data.join('\n') });
    }
  });
}

const unreachable = (url: string, reason: string) => new MsgflowError('DAEMON_API_UNREACHABLE', { url, reason });

/** Opens the flow's event stream; resolves once the daemon has subscribed it (its first bytes). */
function openFollow(target: DaemonTarget, flow: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${target.url}/api/events?flow=${encodeURIComponent(flow)}`,
      { headers: { accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(unreachable(target.url, `GET /api/events answered ${res.statusCode}`));
        }
        res.once('data', () => resolve(res));
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => reject(unreachable(target.url, e.code ?? e.message)));
    req.end();
  });
}

/** POSTs the run; answers its id, or throws the daemon's refusal (a bad input as a bad `-i`). */
async function postRun(target: DaemonTarget, flow: string, body: { inputs: Record<string, string>; dryRun: boolean }): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`${target.url}/api/flows/${encodeURIComponent(flow)}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(target.token ? { authorization: `Bearer ${target.token}` } : {}) },
      body: JSON.stringify(body),
    });
  } catch (e) {
    const cause = (e as { cause?: NodeJS.ErrnoException }).cause;
    throw unreachable(target.url, cause?.code ?? (e as Error).message);
  }
  const answer = (await res.json().catch(() => ({}))) as { runId?: string; error?: { code?: string; message?: string; field?: string } };
  if (res.ok && typeof answer.runId === 'string') return answer.runId;
  const err = answer.error ?? {};
  if (err.code === 'UI_BAD_REQUEST' && err.field?.startsWith('inputs.')) {
    const reason = (err.message ?? '').replace(`${err.field}: `, '');
    throw new MsgflowError('INPUT_ARG_INVALID', { location: '-i', input: err.field.slice('inputs.'.length), reason });
  }
  let message = err.message ?? `HTTP ${res.status}`;
  // The usual cause: ui.token comes from the environment (${MSGFLOW_UI_TOKEN}), set for the daemon but not in this terminal.
  if (err.code === 'UI_UNAUTHORIZED')
    message += `; this config's ui.token is ${target.token ? "not the daemon's" : 'empty'} (--no-daemon runs the flow here)`;
  throw new MsgflowError('DAEMON_API_REFUSED', { url: target.url, code: err.code ?? `HTTP ${res.status}`, message });
}

/** The run this engine event belongs to (a log line's in its fields). */
function runIdOf(name: string, e: Record<string, unknown>): unknown {
  return name === 'log' ? (e.fields as Record<string, unknown> | undefined)?.runId : e.runId;
}

const ENDS = new Set(['run:finished', 'run:failed', 'run:interrupted']);

/**
 * Starts `flow` in the daemon and follows it: its engine events are emitted
 * on `bus`; `done` settles with the store's record once the run is no longer
 * running or waiting (interrupted included: the daemon stopped).
 */
export async function startInDaemon(
  target: DaemonTarget,
  flow: string,
  opts: { inputs: Record<string, string>; dryRun: boolean },
  bus: EngineBus,
  readRun: (id: string) => Promise<RunRecord | undefined>,
): Promise<RemoteRunHandle> {
  const stream = await openFollow(target, flow);
  // Events that arrive before the POST answers (run:started does) wait for the run's id.
  const early: Array<{ name: string; event: Record<string, unknown> }> = [];
  let runId: string | undefined;
  let check: () => void = () => {};
  const emit = (m: { name: string; event: Record<string, unknown> }) => {
    if (runIdOf(m.name, m.event) !== runId) return;
    bus.emit(m.name as EngineEventName, m.event as never);
    if (ENDS.has(m.name)) check();
  };
  onSse(stream, (e) => {
    if (e.event !== 'bus') return;
    const m = JSON.parse(e.data) as { name: string; event: Record<string, unknown> };
    if (runId === undefined) early.push(m);
    else emit(m);
  });
  try {
    runId = await postRun(target, flow, opts);
  } catch (e) {
    stream.destroy();
    throw e;
  }
  for (const m of early.splice(0)) emit(m);
  let timer: NodeJS.Timeout | undefined;
  const detach = () => {
    if (timer) clearInterval(timer);
    stream.destroy();
  };
  const id = runId;
  const done = new Promise<RunRecord>((resolve) => {
    let reading = false;
    check = () => {
      if (reading) return;
      reading = true;
      readRun(id)
        .then(
          (r) => {
            if (r && r.status !== 'running' && r.status !== 'waiting') {
              detach();
              resolve(r);
            }
          },
          () => {
            // The store briefly unreadable: the next tick reads again (done never rejects, like a local run's).
          },
        )
        .finally(() => (reading = false));
    };
    timer = setInterval(check, STATUS_POLL_MS);
    stream.on('close', check);
  });
  return { runId: id, done, detach };
}
