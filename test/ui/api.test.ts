/**
 * The dashboard's JSON API, SSE, health and metrics, in-process: a real
 * Runtime over a temp project (YAML flows, the local service), real HTTP on
 * port 0.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MsgflowError } from '../../src/api/errors.js';
import { createUiServer } from '../../src/ui/server.js';
import { STORE_PROBE_MS } from '../../src/ui/health.js';
import { LOCAL_ID, LOCAL_TOKEN, get, post, readEvents, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';

describe('dashboard API', () => {
  let p: Project;
  beforeAll(async () => {
    p = await startProject();
  });
  afterAll(async () => {
    await p?.close();
  });

  it('lists flows with the cron in words, the next fire time in the flow timezone, and inputs', async () => {
    const { status, body } = await get(`${p.url}/api/flows`);
    expect(status).toBe(200);
    const check = body.flows.find((f: any) => f.name === 'check-some');
    expect(check.trigger.schedule.description).toBe('At 09:00, Monday through Friday');
    expect(check.trigger.schedule.timezone).toBe('Europe/Berlin');
    expect(check.trigger.schedule.nextLocal).toMatch(/^\d{4}-\d\d-\d\d 09:00 \(Europe\/Berlin\)$/);
    expect(check.inputs.map((i: any) => i.name)).toEqual(['numbers']);
    expect(check.file).toBe('flows/check-some.yaml');
    const slow = body.flows.find((f: any) => f.name === 'slow-check');
    expect(slow.trigger.schedule).toBeUndefined();
  });

  it('runs a flow through POST, shows it in GET /api/runs and streams its progress over SSE', async () => {
    const events = readEvents(
      `${p.url}/api/events`,
      (e) => e.event === 'run' && e.data.flow === 'check-some' && e.data.status === 'succeeded',
    );
    // The stream is attached before the run starts.
    await waitFor('an SSE client', () => p.server.events.clients > 0);
    const started = await post(`${p.url}/api/flows/check-some/runs`, { inputs: {} });
    expect(started.status).toBe(201);
    const runId: string = started.body.runId;
    expect(runId).toMatch(/check-some/);

    const seen = await events;
    expect(seen.some((e) => e.event === 'step' && e.data.runId === runId && e.data.step === 'check')).toBe(true);
    const final = seen.at(-1)!.data;
    expect(final).toMatchObject({ id: runId, status: 'succeeded' });

    const list = await get(`${p.url}/api/runs?flow=check-some&limit=5`);
    expect(list.body.runs[0]).toMatchObject({ id: runId, flow: 'check-some', status: 'succeeded' });
    const byStatus = await get(`${p.url}/api/runs?status=failed`);
    expect(byStatus.body.runs.find((r: any) => r.id === runId)).toBeUndefined();

    const run = await get(`${p.url}/api/runs/${runId}`);
    expect(run.status).toBe(200);
    const step = run.body.steps[0];
    expect(step).toMatchObject({ step: 'check', action: 'checkAccount.bulk', status: 'succeeded' });
    expect(step.output).toMatchObject({ exists: 3, invalid: 1, duplicates: 1 });
    expect(typeof step.durationMs).toBe('number');
    expect(run.body.inputs.numbers).toHaveLength(8);

    const report = await fetch(`${p.url}${step.reportUrl}`);
    expect(report.status).toBe(200);
    expect(report.headers.get('content-type')).toMatch(/text\/csv/);
    expect(await report.text()).toContain('79001112233');

    const flows = await get(`${p.url}/api/flows`);
    expect(flows.body.flows.find((f: any) => f.name === 'check-some').lastRun).toMatchObject({ id: runId, status: 'succeeded' });
  });

  it('validates inputs like -i and names the field', async () => {
    const unknown = await post(`${p.url}/api/flows/check-some/runs`, { inputs: { nubmers: '1' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('inputs.nubmers');
    expect(unknown.body.error.message).toMatch(/did you mean 'numbers'/);
    const notArray = await post(`${p.url}/api/flows/check-some/runs`, { inputs: { numbers: null } });
    expect(notArray).toMatchObject({ status: 400, body: { error: { field: 'inputs.numbers' } } });
    const extra = await post(`${p.url}/api/flows/check-some/runs`, { input: {} });
    expect(extra).toMatchObject({ status: 400, body: { error: { field: 'input' } } });
    const nope = await post(`${p.url}/api/flows/nope/runs`, {});
    expect(nope.status).toBe(404);
    expect((await get(`${p.url}/api/runs/%E0%A4%A`)).body.error).toMatchObject({ code: 'UI_BAD_REQUEST', field: 'path' });
    const list = await get(`${p.url}/api/runs?status=bogus`);
    expect(list).toMatchObject({ status: 400, body: { error: { field: 'status' } } });
  });

  it('refuses cross-site requests: a form post without JSON, or another Origin', async () => {
    const form = await fetch(`${p.url}/api/flows/check-some/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(form.status).toBe(403);
    const origin = await post(`${p.url}/api/flows/check-some/runs`, {}, { origin: 'http://evil.example' });
    expect(origin.status).toBe(403);
    // DNS rebinding: a hostile name resolving to 127.0.0.1 reaches the server with its own Host header.
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${p.url}/api/runs`, { headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(rebound).toBe(403);
  });

  it('cancels an unfinished run through the engine and refuses to cancel a finished one', async () => {
    const started = await post(`${p.url}/api/flows/slow-check/runs`, {});
    const id = started.body.runId;
    // A long input is answered as a preview: the first 20 items and how many more.
    const detail = await get(`${p.url}/api/runs/${id}`);
    expect(detail.body.inputs.numbers).toHaveLength(21);
    expect(detail.body.inputs.numbers[20]).toBe('… 20 more (40 in all)');
    const cancel = await post(`${p.url}/api/runs/${id}/cancel`);
    if (cancel.status === 409) {
      // The run already ended (a very fast machine): cancelling it is a conflict, as for any finished run.
      expect(cancel.body.error.code).toBe('UI_CONFLICT');
    } else {
      expect(cancel).toMatchObject({ status: 202, body: { runId: id, pending: true } });
      const run = await waitFor('the run to stop', async () => {
        const r = (await get(`${p.url}/api/runs/${id}`)).body.run;
        return ['running', 'waiting'].includes(r.status) ? undefined : r;
      });
      expect(run.status).toBe('cancelled');
      expect(run.itemsDone).toBeLessThan(40);
      // The step cut short reads cancelled, not running forever.
      const steps = (await get(`${p.url}/api/runs/${id}`)).body.steps as Array<{ status: string }>;
      expect(steps.map((s) => s.status)).not.toContain('running');
      expect(steps.map((s) => s.status)).toContain('cancelled');
    }
    const list = await get(`${p.url}/api/runs?flow=check-some&status=succeeded&limit=1`);
    const done = await post(`${p.url}/api/runs/${list.body.runs[0].id}/cancel`);
    expect(done).toMatchObject({ status: 409, body: { error: { code: 'UI_CONFLICT' } } });
    expect((await post(`${p.url}/api/runs/no-such-run/cancel`)).status).toBe(404);
  });

  it('retries a failed run: a new run that redoes its failed items; a succeeded run has nothing to retry (409)', async () => {
    const ended = async (id: string) =>
      waitFor(`run ${id} to end`, async () => {
        const r = (await get(`${p.url}/api/runs/${id}`)).body.run;
        return ['running', 'waiting'].includes(r.status) ? undefined : r;
      });
    const old = (await post(`${p.url}/api/flows/fail-some/runs`, {})).body.runId;
    expect((await ended(old)).status).toBe('failed');
    const retry = await post(`${p.url}/api/runs/${old}/retry`);
    expect(retry).toMatchObject({ status: 201, body: { flow: 'fail-some', retryOf: old } });
    expect(retry.body.runId).not.toBe(old);
    expect((await ended(retry.body.runId)).flow).toBe('fail-some');
    const succeeded = (await get(`${p.url}/api/runs?flow=check-some&status=succeeded&limit=1`)).body.runs[0].id;
    expect(await post(`${p.url}/api/runs/${succeeded}/retry`)).toMatchObject({
      status: 409,
      body: { error: { code: 'NOTHING_TO_RETRY' } },
    });
    expect((await post(`${p.url}/api/runs/no-such-run/retry`)).status).toBe(404);
  });

  it('lists instances with their pauses and lifts them', async () => {
    const inst = await get(`${p.url}/api/instances`);
    const identity = inst.body.instances[0].identity;
    expect(inst.body.instances[0]).toMatchObject({ name: 'default', kind: 'local', pauses: [] });
    const now = Date.now();
    await p.runtime.store.kv('shared:pauses').set(`${identity}:checkAccount`, {
      instance: 'default',
      identity,
      scope: 'checkAccount',
      since: now,
      until: now + 7_200_000,
      retryAfterMs: 7_200_000,
      reason: 'rate_limit_exceeded',
    });
    const paused = await get(`${p.url}/api/instances`);
    expect(paused.body.instances[0].pauses[0]).toMatchObject({
      scope: 'checkAccount',
      reason: 'rate_limit_exceeded',
      active: true,
      until: now + 7_200_000,
    });
    const metrics = await get(`${p.url}/metrics`);
    expect(metrics.text).toMatch(/msgflow_instance_pauses\{instance="default",scope="checkAccount"\} 1/);
    const lifted = await post(`${p.url}/api/instances/default/pauses/lift`);
    expect(lifted).toMatchObject({ status: 200, body: { instance: 'default', lifted: 1 } });
    expect((await get(`${p.url}/api/instances`)).body.instances[0].pauses).toEqual([]);
    expect((await post(`${p.url}/api/instances/nope/pauses/lift`)).status).toBe(404);
  });

  it('serves /healthz with the store and each instance', async () => {
    const h = await get(`${p.url}/healthz`);
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({
      status: 'ok',
      store: { ok: true, driver: 'lowdb' },
      instances: { default: { kind: 'local', reachable: true } },
    });
  });

  it('serves Prometheus metrics: runs by flow and status, items by job, API calls by method and status', async () => {
    const m = await get(`${p.url}/metrics`);
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/text\/plain/);
    expect(m.text).toMatch(/msgflow_runs\{flow="check-some",status="succeeded"\} [1-9]/);
    expect(m.text).toMatch(/msgflow_items_total\{action="checkAccount.bulk",outcome="done"\} [1-9]/);
    expect(m.text).toMatch(/msgflow_api_calls_total\{instance="default",method="checkAccount",outcome="ok"\} [1-9]/);
    expect(m.text).toMatch(/msgflow_runs_finished_total\{flow="check-some",status="succeeded"\} [1-9]/);
  });

  it('never answers with the instance id or token, in pages, API answers or metrics', async () => {
    const pages = await Promise.all(
      ['/', '/assets/app.js', '/api/flows', '/api/runs', '/api/instances', '/metrics', '/healthz'].map((u) => get(`${p.url}${u}`)),
    );
    for (const page of pages) {
      expect(page.text).not.toContain(LOCAL_ID);
      expect(page.text).not.toContain(LOCAL_TOKEN);
    }
    const list = await get(`${p.url}/api/runs?limit=5`);
    for (const r of list.body.runs) {
      const one = await get(`${p.url}/api/runs/${r.id}`);
      expect(one.text).not.toContain(LOCAL_ID);
      expect(one.text).not.toContain(LOCAL_TOKEN);
    }
  });

  it('serves the pages with a script-only-from-self policy and uPlot from node_modules', async () => {
    const page = await get(`${p.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.text).toContain('/assets/uplot.js');
    const uplot = await get(`${p.url}/assets/uplot.js`);
    expect(uplot.status).toBe(200);
    expect(uplot.text).toContain('uPlot');
    // Data travels as JSON (never HTML): a description with markup is a JSON string.
    const flows = await get(`${p.url}/api/flows`);
    expect(flows.headers.get('content-type')).toMatch(/^application\/json/);
    expect(flows.body.flows.find((f: any) => f.name === 'xss').description).toContain('<script>');
  });
});

describe('dashboard safety', () => {
  it('needs the bearer token for every state-changing request when a token is set', async () => {
    const p = await startProject({ token: 'dash-secret-1', unpaced: true });
    try {
      const none = await post(`${p.url}/api/flows/check-some/runs`, {});
      expect(none).toMatchObject({ status: 401, body: { error: { code: 'UI_UNAUTHORIZED' } } });
      const wrong = await post(`${p.url}/api/instances/default/pauses/lift`, undefined, { authorization: 'Bearer nope' });
      expect(wrong.status).toBe(401);
      expect((await post(`${p.url}/api/runs/x/cancel`)).status).toBe(401);
      // Reading needs no token.
      expect((await get(`${p.url}/api/runs`)).status).toBe(200);
      const ok = await post(`${p.url}/api/flows/check-some/runs`, {}, { authorization: 'Bearer dash-secret-1' });
      expect(ok.status).toBe(201);
      await waitFor('the run to end', async () =>
        ['succeeded', 'failed'].includes((await p.runtime.engine.getRun(ok.body.runId))?.status ?? ''),
      );
      const pages = await Promise.all(
        ['/api/runs', `/api/runs/${ok.body.runId}`, '/metrics', '/healthz', '/'].map((u) => get(`${p.url}${u}`)),
      );
      for (const page of pages) expect(page.text).not.toContain('dash-secret-1');
    } finally {
      await p.close();
    }
  });

  it('refuses to bind to a non-loopback address without a token', async () => {
    const p = await startProject();
    try {
      const err = await createUiServer({ runtime: p.runtime, host: '0.0.0.0', port: 0 }).catch((e) => e);
      expect(err).toBeInstanceOf(MsgflowError);
      expect(err.code).toBe('UI_UNSAFE_BIND');
      expect(err.message).toMatch(/ui.host 0.0.0.0 is not a loopback address and ui.token is empty/);
      const busy = await createUiServer({ runtime: p.runtime, port: p.server.port }).catch((e) => e);
      expect(busy.code).toBe('PORT_IN_USE');
      expect(busy.message).toMatch(/ui.port in config.yaml \(or --port\)/);
    } finally {
      await p.close();
    }
  });

  it('answers 503 on /healthz when the store is unusable', async () => {
    const p = await startProject();
    try {
      const kv = p.runtime.store.kv;
      (p.runtime.store as any).kv = () => {
        throw new MsgflowError('STORE_UNAVAILABLE', { driver: 'lowdb', reason: 'disk gone' });
      };
      const h = await get(`${p.url}/healthz`);
      (p.runtime.store as any).kv = kv;
      expect(h.status).toBe(503);
      expect(h.body).toMatchObject({ status: 'unavailable', store: { ok: false } });
      expect(h.body.store.error).toMatch(/disk gone/);
    } finally {
      await p.close();
    }
  });

  it("answers 503 on /healthz from the store connection's state while it is down, without waiting for the store", async () => {
    const p = await startProject();
    const store = p.runtime.store as any;
    const { kv } = store;
    try {
      // A store whose calls never answer, as the driver's own retries would make them wait.
      store.kv = () => ({ set: () => new Promise(() => {}), get: () => new Promise(() => {}) });
      store.connection = { reachable: false, onReachable: () => () => {} };
      const down = await get(`${p.url}/healthz`);
      expect(down.status).toBe(503);
      expect(down.body.store).toEqual({
        ok: false,
        driver: 'lowdb',
        error: 'the lowdb store is unavailable: not connected (reconnecting)',
      });
      // Connected, but no answer: a 503 once the probe's bound passes, not after the driver gives up.
      store.connection = { reachable: true, onReachable: () => () => {} };
      const silent = await get(`${p.url}/healthz`);
      expect(silent.status).toBe(503);
      expect(silent.body.store.error).toBe(`the lowdb store is unavailable: no answer within ${STORE_PROBE_MS} ms`);
    } finally {
      store.kv = kv;
      delete store.connection;
      await p.close();
    }
  });
});
