/**
 * The EngineClient over a running daemon's dashboard API (docs/dashboard.md):
 * runs start and execute in the daemon, their engine events come through
 * `GET /api/events?flow=NAME`, and state-changing requests carry the
 * dashboard's token. The daemon answers in the API's shapes, which the
 * in-process client answers in too.
 */
import { FlowError, MsgflowError } from '../../api/errors.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../api/error-codes.js';
import type { PauseView, RunDetail } from '../../ui/api.js';
import { toInstancePause } from '../pauses.js';
import { EndWatch, endedRun, isLive, RunEvents } from './follow.js';
import { openFlowEvents, unreachable, type FlowEventStream } from './sse.js';
import type * as C from './types.js';

export interface HttpEngineClientOptions {
  /** The daemon's dashboard, e.g. `http://127.0.0.1:7071`. */
  url: string;
  /** Its `ui.token`, sent with state-changing requests. @default '' (none) */
  token?: string;
  /** How often a followed run's status is looked at besides its events (real time). @default 1000 */
  pollMs?: number;
}

interface ApiAnswer {
  status: number;
  body: any;
}

/** The API's `{ error: { code, message, field } }`. */
interface ApiErrorBody {
  code?: string;
  message?: string;
  field?: string;
}

/**
 * The daemon's refusal as the error the in-process client throws for the same
 * request: its own code when the engine decided (NOTHING_TO_RETRY, RUN_LIVE),
 * its words kept; DAEMON_API_REFUSED for what only the API decides (token).
 */
function refused(url: string, a: ApiAnswer): MsgflowError {
  const err: ApiErrorBody = a.body?.error ?? {};
  const code = err.code ?? `HTTP ${a.status}`;
  if (err.code && Object.hasOwn(ERROR_CATALOGUE, err.code) && !err.code.startsWith('UI_') && err.code !== 'INTERNAL') {
    const e = new MsgflowError(err.code as ErrorCode, {});
    e.message = err.message ?? e.message;
    return e;
  }
  return new MsgflowError('DAEMON_API_REFUSED', { url, code, message: err.message ?? `HTTP ${a.status}` });
}

/** @example const client = createHttpEngineClient({ url: 'http://127.0.0.1:7071', token }); */
export function createHttpEngineClient(o: HttpEngineClientOptions): C.EngineClient {
  return new HttpClient(o.url.replace(/\/+$/, ''), o.token ?? '', o.pollMs ?? 1000);
}

const runPath = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

class HttpClient implements C.EngineClient {
  /** How each run followed now stops being followed. */
  private readonly open = new Set<() => void>();

  constructor(
    readonly target: string,
    private readonly token: string,
    private readonly pollMs: number,
  ) {}

  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer> {
    const post = method === 'POST';
    const auth: Record<string, string> = post && this.token ? { authorization: `Bearer ${this.token}` } : {};
    let res: Response;
    try {
      res = await fetch(`${this.target}${path}`, {
        method,
        headers: post ? { 'content-type': 'application/json', ...auth } : { accept: 'application/json' },
        ...(post ? { body: JSON.stringify(body ?? {}) } : {}),
      });
    } catch (e) {
      const cause = (e as { cause?: NodeJS.ErrnoException }).cause;
      throw unreachable(this.target, cause?.code ?? (e as Error).message);
    }
    return { status: res.status, body: await res.json().catch(() => ({})) };
  }

  /** The answer's body when it is a 2xx; the daemon's refusal thrown otherwise. */
  private async ok(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
    const a = await this.call(method, path, body);
    if (a.status >= 200 && a.status < 300) return a.body;
    throw refused(this.target, a);
  }

  /** The run's detail; undefined for an id the daemon does not know. */
  private async detail(id: string): Promise<RunDetail | undefined> {
    const a = await this.call('GET', runPath(id));
    if (a.status === 404) return undefined;
    if (a.status !== 200) throw refused(this.target, a);
    return a.body as RunDetail;
  }

  /**
   * The run now, for following it: whether it still runs, from the flow's
   * list of live runs (the daemon answers it from its run index, reading none
   * of the run's items); its detail once it does not.
   */
  private async look(id: string, flow: string): Promise<C.RunView | undefined> {
    const q = new URLSearchParams({ flow, status: 'running,waiting', limit: '1000' });
    const live = (await this.ok('GET', `/api/runs?${q}`)) as { runs: C.RunView[] };
    return live.runs.find((r) => r.id === id) ?? (await this.getRun(id));
  }

  /**
   * Follows `runId` over the flow's event stream already open: its ending
   * events and a timer look at its status; a stream the daemon closed is
   * opened again while the run lives, and `done` rejects with
   * DAEMON_API_UNREACHABLE once the daemon no longer answers.
   */
  private followOn(stream: FlowEventStream, events: RunEvents, runId: string, flow: string): C.FollowedRun {
    const watch = new EndWatch({
      read: () => this.look(runId, flow),
      pollMs: this.pollMs,
      fatal: (e) => e instanceof MsgflowError && e.code === 'DAEMON_API_UNREACHABLE',
    });
    // The run's own detail: the daemon reads it from the store, while its run index may not have seen the end yet.
    events.onEnding = () => watch.check(() => this.getRun(runId));
    let current = stream;
    let detached = false;
    const detach = () => {
      detached = true;
      events.detach();
      watch.stop();
      current.close();
      this.open.delete(detach);
    };
    const reopen = () => {
      if (detached) return;
      watch.check();
      openFlowEvents(this.target, flow, (e) => events.accept(e)).then(
        (s) => {
          if (detached) return s.close();
          current = s;
          s.onClose(reopen);
        },
        // The daemon is gone: the next look at the status rejects `done` with why.
        () => watch.check(),
      );
    };
    stream.onClose(reopen);
    this.open.add(detach);
    void watch.done.then(detach, detach);
    // A run followed once started may have ended before its stream was open.
    watch.check();
    return { runId, flow, done: watch.done, detach };
  }

  /** Opens the flow's stream, then `begin` (which answers the run's id): no event of the run is missed. */
  private async launch(flow: string, f: C.FollowOptions, begin: () => Promise<string>): Promise<C.FollowedRun> {
    const events = new RunEvents(f.onEvent);
    const stream = await openFlowEvents(this.target, flow, (e) => events.accept(e));
    let runId: string;
    try {
      runId = await begin();
    } catch (e) {
      stream.close();
      throw e;
    }
    const run = this.followOn(stream, events, runId, flow);
    events.bind(runId);
    return run;
  }

  start(flow: string, s: C.StartRunOptions = {}): Promise<C.FollowedRun> {
    const body = {
      inputs: s.inputs ?? {},
      dryRun: s.dryRun === true,
      ...(s.event ? { event: s.event } : {}),
      // The daemon applies a plan; one is written by the process that asks for it (msgflow run --plan runs here).
      ...(s.plan?.mode === 'apply' ? { applyPlan: s.plan.path } : {}),
    };
    return this.launch(flow, s, async () => {
      const a = await this.call('POST', `/api/flows/${encodeURIComponent(flow)}/runs`, body);
      if (a.status === 201) return a.body.runId as string;
      throw startRefused(this.target, flow, a);
    });
  }

  async follow(runId: string, f: C.FollowOptions = {}): Promise<C.FollowedRun> {
    const run = await this.getRun(runId);
    if (!run) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (!isLive(run)) return endedRun(run);
    return this.launch(run.flow, f, async () => runId);
  }

  async getRun(id: string): Promise<C.RunView | undefined> {
    return (await this.detail(id))?.run;
  }

  async getSteps(id: string): Promise<C.StepView[]> {
    return (await this.detail(id))?.steps ?? [];
  }

  async listRuns(q: C.RunListQuery = {}): Promise<C.RunView[]> {
    const params = new URLSearchParams({ limit: String(q.limit ?? 50) });
    if (q.flow) params.set('flow', q.flow);
    if (q.status) params.set('status', q.status.join(','));
    return ((await this.ok('GET', `/api/runs?${params}`)) as { runs: C.RunView[] }).runs;
  }

  async cancel(runId: string): Promise<C.CancelOutcome> {
    const a = await this.call('POST', `${runPath(runId)}/cancel`);
    if (a.status === 404) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (a.status === 409) {
      // Only an unfinished run can be cancelled: this one had ended, and is left as it was.
      const run = await this.getRun(runId);
      if (run) return { runId, status: run.status, pending: false, ended: true };
    }
    if (a.status !== 202) throw refused(this.target, a);
    return { runId, status: a.body.status, pending: a.body.pending === true, ended: false };
  }

  async retry(runId: string, f: C.FollowOptions = {}): Promise<C.FollowedRun> {
    const old = await this.getRun(runId);
    if (!old) throw new FlowError('RUN_NOT_FOUND', { runId });
    return this.launch(old.flow, f, async () => {
      const a = await this.call('POST', `${runPath(runId)}/retry`);
      if (a.status === 201) return a.body.runId as string;
      // The run exists (read above): what the daemon does not find is its flow.
      if (a.status === 404) throw new FlowError('FLOW_NOT_FOUND', { name: old.flow, dir: `the daemon at ${this.target}` });
      if (a.status === 409 && a.body?.error?.code === 'UI_CONFLICT')
        throw new MsgflowError('USAGE', { reason: String(a.body.error.message ?? `run ${runId} is unfinished`) });
      throw refused(this.target, a);
    });
  }

  async backfill(flow: string, range: { from: number; to: number }): Promise<C.BackfillOutcome> {
    const a = await this.call('POST', `/api/flows/${encodeURIComponent(flow)}/backfill`, range);
    if (a.status === 201) return a.body as C.BackfillOutcome;
    if (a.status === 404) throw new FlowError('FLOW_NOT_FOUND', { name: flow, dir: `the daemon at ${this.target}` });
    if (a.status === 400 && a.body?.error?.code === 'BACKFILL_INVALID') {
      const e = new FlowError('BACKFILL_INVALID', { flow, reason: '' });
      e.message = String(a.body.error.message);
      throw e;
    }
    throw refused(this.target, a);
  }

  async pauses(): Promise<C.InstancePause[]> {
    const body = (await this.ok('GET', '/api/instances')) as { instances: Array<{ pauses: PauseView[] }>; otherPauses: PauseView[] };
    const all = [...body.instances.flatMap((i) => i.pauses), ...body.otherPauses];
    return all.filter((p) => p.active).map(toInstancePause);
  }

  async liftPauses(instance: string): Promise<number> {
    const a = await this.call('POST', `/api/instances/${encodeURIComponent(instance)}/pauses/lift`);
    if (a.status === 404) throw new MsgflowError('USAGE', { reason: `instance '${instance}' is not in the daemon's config.yaml` });
    if (a.status !== 200) throw refused(this.target, a);
    return a.body.lifted as number;
  }

  async close(): Promise<void> {
    for (const detach of [...this.open]) detach();
  }
}

/**
 * Why the daemon did not start the run, as the in-process client says it: a
 * flow it has not loaded, an input it refused (named, as a bad `-i`).
 */
function startRefused(url: string, flow: string, a: ApiAnswer): MsgflowError {
  const err: ApiErrorBody = a.body?.error ?? {};
  if (a.status === 404) return new FlowError('FLOW_NOT_FOUND', { name: flow, dir: `the daemon at ${url}` });
  if (err.code === 'UI_BAD_REQUEST' && err.field?.startsWith('inputs.')) {
    const message = err.message ?? '';
    // The API's message is `{field}: {reason}` (UI_BAD_REQUEST): the reason is what follows the field.
    const reason = message.startsWith(`${err.field}: `) ? message.slice(err.field.length + 2) : message;
    return new MsgflowError('INPUT_ARG_INVALID', { location: `flow '${flow}'`, input: err.field.slice('inputs.'.length), reason });
  }
  return refused(url, a);
}
