/** Sub-flows (`uses: flow/<name>`): a run of their own, outputs back to the caller, fan-out, cancel, failures, validate. */
import { cpSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { subflowRunId, SUBFLOW_RUNS_NS } from '../../src/engine/run/subflow.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';
import { waitFor } from '../support/wait.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('sub-flows', () => {
  it('examples/subflows: a forEach fans out one child run per contact, each with its parent, and gathers their outputs', async () => {
    const dir = project();
    cpSync(path.join(ROOT, 'examples/subflows'), dir, { recursive: true, filter: (src) => !src.includes('.msgflow') });
    expect((await cli(['validate'], dir)).code).toBe(0);
    // Its flow test: the sub-flows run under msgflow test too.
    const tested = await cli(['test'], dir);
    expect(tested.code, tested.stdout).toBe(0);
    expect(tested.stdout).toContain('1 passed, 0 failed');
    const r = await cli(['run', 'greet-all'], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('2 of 3 contacts greeted');

    const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
    try {
      const [parent] = await store.listRuns({ flow: 'greet-all' });
      const children = await store.listRuns({ flow: 'greet-contact' });
      expect(children).toHaveLength(3);
      for (const c of children) {
        expect(c).toMatchObject({
          status: 'succeeded',
          trigger: 'subflow',
          parent: { runId: parent!.id, flow: 'greet-all', step: 'greet' },
        });
        expect(c.id).toBe(subflowRunId(parent!.id, 'greet', 'greet-contact', c.parent!.item));
      }
      const greet = (await store.getSteps(parent!.id)).find((s) => s.step === 'greet')!;
      expect(greet).toMatchObject({ status: 'succeeded', done: 3, failed: 0 });
      const items = [...(await store.getItems(parent!.id, 'greet')).values()].sort((a, b) => a.index - b.index);
      expect(items.map((i) => i.output)).toEqual([
        { phone: '79001112233', greeted: true, messageId: expect.any(String) },
        { phone: '79002223344', greeted: true, messageId: expect.any(String) },
        { phone: '79009999999', greeted: false },
      ]);
      // The links the parent wrote before starting each child: what cancelling the parent follows.
      expect(await store.kv(SUBFLOW_RUNS_NS).entries(`${parent!.id}/`)).toHaveLength(3);
    } finally {
      await store.close();
    }
    const runs = await cli(['runs', '--flow', 'greet-contact'], dir);
    expect(runs.stdout.match(/greet-contact-s\S+\s+greet-contact\s+succeeded/g)).toHaveLength(3);
    const first = /(greet-contact-s\S+)/.exec(runs.stdout)![1]!;
    const shown = await cli(['runs', 'show', first], dir);
    expect(shown.stdout).toMatch(/ {2}parent: {4}run greet-all-\S+ of greet-all, step greet, item \d/);
    expect(shown.stdout).toMatch(/ {2}outputs: {3}\{"phone":"\d+","greeted":(true|false)/);
  });

  it('a child that fails fails its step with SUBFLOW_FAILED, naming the child run and its error', async () => {
    const boom = action('boom', async () => {
      throw new Error('the CRM said no');
    });
    const child = flow([step({ id: 'b', uses: 'boom' })], { name: 'child' });
    const parent = flow([step({ id: 'call', uses: 'flow/child' })], { name: 'parent' });
    const { engine } = testEngine(registryWith(boom), { flowFor: (n) => [child, parent].find((f) => f.name === n) });
    const run = await (await engine.start(parent)).done;
    const childId = subflowRunId(run.id, 'call', 'child');
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'SUBFLOW_FAILED', step: 'call' });
    expect(run.error!.message).toContain(`sub-flow run ${childId} failed`);
    expect(run.error!.message).toContain('the CRM said no');
    expect(await engine.getRun(childId)).toMatchObject({ status: 'failed', parent: { runId: run.id, step: 'call' } });
  });

  it('with: values are checked against the child inputs at run time: an unknown input fails the step before any child starts', async () => {
    const noop = action('noop', async () => ({}));
    const child = flow([step({ id: 'n', uses: 'noop' })], { name: 'child', inputs: { phone: { type: 'string' } } });
    const parent = flow([step({ id: 'call', uses: 'flow/child', with: { phone: 79001112233 } })], { name: 'parent' });
    const { engine, store } = testEngine(registryWith(noop), { flowFor: (n) => [child, parent].find((f) => f.name === n) });
    const run = await (await engine.start(parent)).done;
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'SUBFLOW_INPUT_INVALID' });
    expect(run.error!.message).toBe("flow 'child' inputs.phone: expected string, got number");
    expect(await store.listRuns({ flow: 'child' })).toEqual([]);
  });

  it('cancelling the parent cancels the child it waits on', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 9));
    const hold = action('hold', async (ctx) => {
      await ctx.wait({ ms: 3_600_000, reason: 'holding' });
      return {};
    });
    const child = flow([step({ id: 'h', uses: 'hold' })], { name: 'child' });
    const parent = flow([step({ id: 'call', uses: 'flow/child' })], { name: 'parent' });
    const { engine } = testEngine(registryWith(hold), { clock, flowFor: (n) => [child, parent].find((f) => f.name === n) });
    const h = await engine.start(parent);
    const childId = subflowRunId(h.runId, 'call', 'child');
    await waitFor('the child waits', async () => (await engine.getRun(childId))?.status === 'waiting');
    await engine.cancel(h.runId);
    expect((await h.done).status).toBe('cancelled');
    await waitFor('the child is cancelled', async () => (await engine.getRun(childId))?.status === 'cancelled');
  });

  it('a flow that reaches itself through sub-flows fails its step at run time instead of recursing', async () => {
    const a = flow([step({ id: 'toB', uses: 'flow/b' })], { name: 'a' });
    const b = flow([step({ id: 'toA', uses: 'flow/a' })], { name: 'b' });
    const { engine } = testEngine(registryWith(), { flowFor: (n) => [a, b].find((f) => f.name === n) });
    const run = await (await engine.start(a)).done;
    expect(run.status).toBe('failed');
    const child = await engine.getRun(subflowRunId(run.id, 'toB', 'b'));
    expect(child?.error?.message).toContain('sub-flows form a cycle: a -> b -> a');
  });
});

describe('msgflow validate and sub-flows', () => {
  const files = {
    'config.yaml': LOCAL_CONFIG,
    'flows/a.yaml': 'name: a\nsteps:\n  - id: toB\n    uses: flow/b\n',
    'flows/b.yaml': 'name: b\nsteps:\n  - id: toA\n    uses: flow/a\n',
    'flows/caller.yaml': [
      'name: caller',
      'steps:',
      '  - id: one',
      '    uses: flow/needs-phone',
      '    with: { phnoe: "79001112233" }',
      '  - id: two',
      '    uses: flow/nowhere',
      '',
    ].join('\n'),
    'flows/outputs.yaml':
      'name: outputs\nsteps:\n  - { id: l, uses: log, with: { message: hi } }\noutputs:\n  n: ${{ steps.three.output }}\n',
    'flows/needs-phone.yaml':
      'name: needs-phone\ninputs:\n  phone: { type: string, required: true }\nsteps:\n  - { id: l, uses: log, with: { message: hi } }\n',
  };

  it('reports cycles, unknown flows, unknown and missing inputs and bad outputs with file:line:col', async () => {
    const dir = project(files);
    const r = await cli(['validate'], dir);
    expect(r.code).not.toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toContain('flows/a.yaml:4:11 steps[0].uses: sub-flows form a cycle: a -> b -> a');
    expect(out).toContain('flows/b.yaml:4:11 steps[0].uses: sub-flows form a cycle: b -> a -> b');
    expect(out).toContain(
      "flows/caller.yaml:5:13 steps[0].with.phnoe: flow 'needs-phone' has no input 'phnoe' (did you mean 'phone'?); it declares phone",
    );
    expect(out).toContain("flows/caller.yaml:5:11 steps[0].with: flow 'needs-phone' needs input 'phone' (required, no default)");
    expect(out).toContain("flows/caller.yaml:7:11 steps[1].uses: unknown flow 'nowhere'");
    expect(out).toContain("flows/outputs.yaml:5:16 outputs.n: expression error in ${{ steps.three.output }}: unknown step 'three'");
  });
});
