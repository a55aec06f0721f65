/**
 * A campaign's recipients each get one message when a second run races the
 * first: two `msgflow run` processes of the campaign started together, and a
 * second one started while the first is mid-campaign; the second is the same
 * flow, or another flow sending the same campaign. Counted at the service:
 * messages per recipient (lastOutgoingMessages lists the queued ones too).
 * Processes, against `msgflow serve` over HTTP: the processes are the subject.
 * `npm run trials` runs 20 of each (MSGFLOW_TRIALS).
 */
import { describe, expect, it, type TestContext } from 'vitest';
import { project as tempProject, writeData } from '../../support/project.js';
import { spawnCli } from '../../support/spawn.js';
import { waitFor } from '../../support/wait.js';
import { E2E_ID, E2E_TOKEN, startProxy, startServe, writeProject } from '../helpers/cli.js';

const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 2);

const PHONES = [79001112233, 79002223344, 79003334455, 79004445566, 79005550000, 79006660001, 79006660002, 79006660003];

/** A campaign flow (`name`) of the campaign `race`: 8 recipients, each send 300 ms after the last. */
const flowYaml = (name: string) => `name: ${name}
steps:
  - id: send
    uses: messages.broadcast
    with:
      recipients: ${JSON.stringify(PHONES)}
      campaign: race
      message: { text: "Spring prices are in" }
      pace: { delay: 300ms, jitter: 0 }
      reconcile: { sendInterval: 500ms, grace: 1s, clockSkew: 2s, journalLag: 1s }
      follow: { deadline: 0 }
      report: reports/${name}.csv
`;

async function project(t: TestContext, hold: (method: string) => boolean) {
  const cleanups: Array<() => Promise<unknown>> = [];
  t.onTestFinished(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const dir = tempProject({}, 'msgflow-race-');
  let serveUrl = '';
  const proxy = await startProxy(() => serveUrl, { hold });
  cleanups.push(() => proxy.close());
  await writeProject(dir, { proxyUrl: proxy.url, instance: { sendIntervalMs: 500 } });
  const serve = await startServe(dir);
  cleanups.push(() => serve.close());
  serveUrl = serve.url;
  await writeData(dir, 'flows/campaign.yaml', flowYaml('campaign'));
  await writeData(dir, 'flows/campaign-again.yaml', flowYaml('campaign-again'));
  const spawn = (flow: string) => {
    const p = spawnCli(['run', flow], dir);
    cleanups.push(() => p.kill());
    let code: number | null | undefined;
    void p.exited.then((c) => (code = c));
    return Object.assign(p, { code: () => code });
  };
  const perRecipient = async () => {
    const res = await fetch(`${serve.url}/waInstance${E2E_ID}/lastOutgoingMessages/${E2E_TOKEN}?minutes=60`);
    const per = new Map<string, number>();
    for (const m of (await res.json()) as { chatId: string }[]) per.set(m.chatId, (per.get(m.chatId) ?? 0) + 1);
    return PHONES.map((p) => per.get(`${p}@c.us`) ?? 0);
  };
  const sends = () => proxy.calls.filter((c) => c.method === 'sendMessage').length;
  return { spawn, perRecipient, sends, proxy };
}

/**
 * One race: the second run (the same flow, or another flow of the campaign)
 * starts with the first (`midway` false), or while the first has its third
 * send in flight. The send in flight (the first one made, in a race) is held
 * until the other run has answered (refused, or waiting for the campaign), so
 * the two certainly overlap. Resolves the messages per recipient, and each
 * exit code.
 */
async function race(t: TestContext, o: { sameFlow: boolean; midway: boolean }) {
  let n = 0;
  const p = await project(t, (method) => method === 'sendMessage' && ++n === (o.midway ? 3 : 1));
  const first = p.spawn('campaign');
  const held = () => p.proxy.held.length === 1;
  // Processes start in seconds on a loaded machine: the waits only turn a hang into a failure.
  const patience = { intervalMs: 5, timeoutMs: 120_000 };
  if (o.midway) await waitFor('the first run mid-campaign', held, { context: first.output, ...patience });
  const second = p.spawn(o.sameFlow ? 'campaign' : 'campaign-again');
  const procs = [first, second];
  const context = () => first.output() + second.output();
  await waitFor('a send in flight', held, { context, ...patience });
  const answered = () => procs.some((x) => x.code() === 2 || x.output().includes('is being sent by'));
  await waitFor('the other run to answer', answered, { context, ...patience });
  await p.proxy.releaseHeld(true);
  const codes = [await first.exited, await second.exited];
  const counts = await p.perRecipient();
  return {
    lost: counts.filter((c) => c === 0).length,
    doubled: counts.reduce((n, c) => n + Math.max(0, c - 1), 0),
    codes,
    output: first.output() + second.output(),
  };
}

async function trials(t: TestContext, midway: boolean) {
  const outcomes: string[] = [];
  let lost = 0;
  let doubled = 0;
  for (let i = 0; i < TRIALS; i++) {
    // Even trials: the same flow again (the engine lets one run of it live); odd: another flow of the campaign.
    const sameFlow = i % 2 === 0;
    const r = await race(t, { sameFlow, midway });
    lost += r.lost;
    doubled += r.doubled;
    // The same flow: the second run is refused (exit 2) and says which run is live; another flow's waits and finds them sent.
    const ok = r.lost === 0 && r.doubled === 0 && (sameFlow ? [...r.codes].sort().join() === '0,2' : r.codes.join() === '0,0');
    outcomes.push(
      ok ? 'ok' : `${sameFlow ? 'same flow' : 'other flow'}: codes ${r.codes.join(',')}, lost ${r.lost}, doubled ${r.doubled}\n${r.output}`,
    );
  }
  if (process.env.MSGFLOW_TRIALS)
    console.info(
      `campaign race trials (${midway ? 'second run mid-campaign' : 'started together'}): ${TRIALS}, ${PHONES.length * TRIALS} recipients, lost ${lost}, doubled ${doubled}`,
    );
  expect(outcomes.filter((x) => x !== 'ok')).toEqual([]);
}

describe.concurrent('a second run racing a campaign (processes)', () => {
  it(
    `two msgflow run of the campaign started together: every recipient gets one message (${TRIALS} trial(s))`,
    async (t) => {
      await trials(t, false);
    },
    120_000 * TRIALS,
  );

  it(
    `a second msgflow run started while the first is mid-campaign: every recipient gets one message (${TRIALS} trial(s))`,
    async (t) => {
      await trials(t, true);
    },
    120_000 * TRIALS,
  );
});
