/**
 * Plan, then apply, from the command line: `msgflow run promo --plan
 * plan.json` against `msgflow serve` (two instances, through a counting
 * proxy), then `msgflow apply plan.json`, killed with kill -9 mid-way (a
 * process: the kill is the subject) and applied again. In-process through
 * runCli otherwise. Counted at the service: messages per recipient and
 * instance (lastOutgoingMessages lists the queued ones too).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { cli } from '../../support/cli.js';
import { project as tempProject, writeData } from '../../support/project.js';
import { spawnCli } from '../../support/spawn.js';
import { waitFor } from '../../support/wait.js';
import { E2E_ID, E2E_TOKEN, serveYaml, startProxy, startServe } from '../helpers/cli.js';

const SECOND_ID = '1101000043';
const PHONES = [79001112233, 79002223344, 79003334455, 79004445566, 79006660001, 79006660002];

const FLOW = `name: promo
inputs:
  recipients: { file: data/recipients.csv, stream: true }
steps:
  - id: send
    uses: messages.broadcast
    with:
      file: \${{ inputs.recipients }}
      campaign: promo
      variants:
        - { name: short, weight: 1, message: { text: "Hi \${{ row.firstName }}" } }
        - { name: long, weight: 1, message: { text: "Hello \${{ row.firstName }}, spring prices are in" } }
      pool:
        instances: [default, second]
        pace: { delay: 600ms, jitter: 0 }
      reconcile: { sendInterval: 500ms, grace: 1s, clockSkew: 2s, journalLag: 1s }
      follow: { deadline: 0 }
      report: reports/promo.csv
`;

async function project(t: TestContext) {
  const cleanups: Array<() => Promise<unknown>> = [];
  t.onTestFinished(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const dir = tempProject({}, 'msgflow-plan-');
  let serveUrl = '';
  const proxy = await startProxy(() => serveUrl);
  cleanups.push(() => proxy.close());
  await writeData(dir, 'serve.yaml', serveYaml([{ id: E2E_ID }, { id: SECOND_ID }]));
  const instance = (id: string) =>
    `    apiUrl: ${proxy.url}\n    idInstance: "${id}"\n    apiTokenInstance: "${E2E_TOKEN}"\n    rateLimit: false\n`;
  await writeData(
    dir,
    'config.yaml',
    `instances:\n  default:\n${instance(E2E_ID)}  second:\n${instance(SECOND_ID)}flowsDir: flows\nstore:\n  driver: lowdb\n  dir: .msgflow/state\n`,
  );
  const serve = await startServe(dir);
  cleanups.push(() => serve.close());
  serveUrl = serve.url;
  await writeData(dir, 'flows/promo.yaml', FLOW);
  await writeData(dir, 'data/recipients.csv', 'phone,firstName\n' + PHONES.map((p, i) => `${p},Friend${i}`).join('\n') + '\n');
  const spawn = (...args: string[]) => {
    const p = spawnCli(args, dir);
    cleanups.push(() => p.kill());
    return p;
  };
  /** Messages per recipient on each instance: `${instance}:${phone}` → count. */
  const sentAt = async () => {
    const per = new Map<string, number>();
    for (const [name, id] of [
      ['default', E2E_ID],
      ['second', SECOND_ID],
    ]) {
      const res = await fetch(`${serve.url}/waInstance${id}/lastOutgoingMessages/${E2E_TOKEN}?minutes=60`);
      for (const m of (await res.json()) as { chatId: string }[]) per.set(`${name}:${m.chatId}`, (per.get(`${name}:${m.chatId}`) ?? 0) + 1);
    }
    return per;
  };
  const sends = () => proxy.calls.filter((c) => c.method === 'sendMessage').length;
  return { dir, spawn, sentAt, sends };
}

describe('msgflow run --plan, msgflow apply', () => {
  it('plans without sending, prints the plan; apply killed with kill -9 mid-way and applied again sends each planned recipient once, from its planned instance', async (t) => {
    const p = await project(t);
    const planned = await cli(['run', 'promo', '--plan', 'plan.json'], p.dir);
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toMatch(/plan: 6 recipients planned; .*plan\.json/);
    expect(planned.stdout).toMatch(/per instance: default 3, second 3/);
    expect(planned.stdout).toMatch(/skipped: none/);
    expect(p.sends()).toBe(0);
    const plan = JSON.parse(await readFile(path.join(p.dir, 'plan.json'), 'utf8'));
    expect(plan.recipients).toHaveLength(6);

    const first = p.spawn('apply', 'plan.json');
    // Processes start in seconds on a loaded machine: the wait only turns a hang into a failure.
    await waitFor('three sends', () => p.sends() >= 3, { context: first.output, intervalMs: 5, timeoutMs: 120_000 });
    await first.kill();
    const again = await cli(['apply', 'plan.json'], p.dir);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/against the plan: 6 of 6 as planned, 0 not sent, 0 from another instance/);
    // The killed apply is resumed (its plan on its record); what it had in flight is found at the service.
    expect(again.stderr).toMatch(/resuming run \S+ of promo from its checkpoint/);

    const per = await p.sentAt();
    const expected = new Map<string, number>(
      plan.recipients.map((r: { instance: string; chatId: string }) => [`${r.instance}:${r.chatId}`, 1]),
    );
    expect(Object.fromEntries(per)).toEqual(Object.fromEntries(expected));
  }, 180_000);

  it('apply is refused naming what changed since the plan (the recipients file, the flow file); a plan of a missing flow, an unreadable plan file and a flow with nothing to plan are named', async (t) => {
    const p = await project(t);
    expect((await cli(['run', 'promo', '--plan', 'plan.json'], p.dir)).code).toBe(0);
    await writeData(p.dir, 'data/recipients.csv', 'phone,firstName\n79001112233,Someone else\n');
    const refused = await cli(['apply', 'plan.json'], p.dir);
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/plan\.json is out of date: data\/recipients\.csv changed since it was made/);
    expect(p.sends()).toBe(0);

    // The flow file: refused before any run starts.
    await writeData(p.dir, 'flows/promo.yaml', FLOW.replace('Hi ', 'Hey '));
    const edited = await cli(['apply', 'plan.json'], p.dir);
    expect(edited.code).not.toBe(0);
    expect(edited.stderr).toMatch(/plan\.json is out of date: the flow file \S*promo\.yaml changed since it was made/);

    const plan = JSON.parse(await readFile(path.join(p.dir, 'plan.json'), 'utf8'));
    await writeFile(path.join(p.dir, 'other.json'), JSON.stringify({ ...plan, flow: 'promo-gone' }));
    const missing = await cli(['apply', 'other.json'], p.dir);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/flow 'promo-gone' not found/);
    const broken = await cli(['apply', 'nothing-here.json'], p.dir);
    expect(broken.stderr).toMatch(/nothing-here\.json: \(file\): cannot read it: ENOENT/);

    // A flow without a broadcast step has nothing to plan: said, exit 2, no plan file.
    await writeData(p.dir, 'flows/hello.yaml', 'name: hello\nsteps:\n  - id: say\n    uses: log\n    with: { message: hi }\n');
    const nothing = await cli(['run', 'hello', '--plan', 'hello-plan.json'], p.dir);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/hello has no messages\.broadcast or files\.broadcast step that ran: nothing planned, no plan written/);
  }, 120_000);
});
