import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderFlowTestJsonSchema } from '../../src/runtime/flow-test/schema.js';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import { cli as runIn } from '../support/cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let dir: string;

/** A copy of the repository's example project (config, flows, their tests, data, plugins). */
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'msgflow-flowtest-'));
  for (const e of ['config.yaml', 'flows', 'data', 'plugins', 'public']) cpSync(path.join(ROOT, e), path.join(dir, e), { recursive: true });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** `msgflow ARGV` in the copied project (its working directory injected: paths resolve and print against it). */
async function cli(...argv: string[]) {
  const r = await runIn(argv, dir);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** A file of the copied project, by its path relative to the project. */
const inProject = (rel: string) => path.join(dir, rel);

describe('msgflow test', () => {
  it('passes the example flows tests, including 300 checks through a 2-hour rate_limit_exceeded pause', async () => {
    const r = await cli('test', '--json');
    expect(r.err).toBe('');
    const summary = JSON.parse(r.out) as {
      passed: number;
      failed: number;
      results: { name: string; virtualMs: number; wallMs: number; passed: boolean }[];
    };
    expect(summary.failed).toBe(0);
    expect(summary.passed).toBeGreaterThanOrEqual(7);
    const bulk = summary.results.find((x) => x.name.startsWith('300 numbers'))!;
    expect(bulk.passed).toBe(true);
    expect(bulk.virtualMs).toBeGreaterThanOrEqual(2 * 3600_000);
    // Figure for the report (not asserted: no timed assertions).
    console.log(`300-number case: ${bulk.wallMs} ms wall for ${(bulk.virtualMs / 3600_000).toFixed(2)} h virtual`);
    expect(r.code).toBe(0);
  });

  it('named as the shell lists them (flows/*.yaml), each test runs once and a flow file stands for the cases that name its flow', async () => {
    const all = JSON.parse((await cli('test', '--json')).out) as { passed: number };
    const globbed = await cli('test', '--json', ...readdirSync(inProject('flows')).map((f) => path.join('flows', f)));
    expect(globbed.err).toBe('');
    expect(JSON.parse(globbed.out)).toMatchObject({ passed: all.passed, failed: 0, untested: [] });
    const one = await cli('test', 'flows/welcome.yaml');
    expect(one.code).toBe(0);
    expect(one.out).toMatch(/^7 passed, 0 failed$/m);
    expect(
      one.out
        .split('\n')
        .filter((l) => l.startsWith('PASS'))
        .every((l) => l.includes('flows/welcome.test.yaml')),
    ).toBe(true);
    writeFileSync(inProject('flows/untested.yaml'), 'name: untested\nsteps:\n  - { id: hi, uses: log, with: { message: hi } }\n');
    const none = await cli('test', 'flows/untested.yaml');
    expect(none.out).toContain('no flow test case runs flows/untested.yaml');
    expect(none.code).toBe(1);
    rmSync(inProject('flows/untested.yaml'));
  });

  it('prints PASS/FAIL per case, a diff for a failed expectation, and "N passed, M failed" last; exit 1', async () => {
    writeFileSync(
      inProject('flows/wrong.test.yaml'),
      `cases:
  - name: expects too many accounts
    flow: check-leads
    expect:
      steps:
        check:
          output: { exists: 99 }
  - name: a 500 on every checkAccount stops the job
    flow: check-leads
    faults:
      - { method: checkAccount, call: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], answer: 500 }
    expect:
      status: failed
      run: { error: { code: JOB_STOPPED, step: check } }
      steps:
        check: { status: failed }
`,
    );
    try {
      const r = await cli('test', 'flows/wrong.test.yaml');
      expect(r.code).toBe(1);
      const lines = r.out.trim().split('\n');
      expect(lines[0]).toMatch(/^FAIL {2}flows\/wrong\.test\.yaml › expects too many accounts/);
      expect(r.out).toContain('at steps.check.output.exists:');
      expect(r.out).toContain('- expected 99');
      expect(r.out).toContain('+ actual   4');
      expect(r.out).toMatch(/PASS {2}flows\/wrong\.test\.yaml › a 500 on every checkAccount stops the job/);
      expect(lines.at(-1)).toBe('1 passed, 1 failed');
    } finally {
      rmSync(inProject('flows/wrong.test.yaml'));
    }
  });

  it('names file:line:col of an invalid test file', async () => {
    writeFileSync(inProject('flows/bad.test.yaml'), 'cases:\n  - name: x\n    flow: check-leads\n    expect:\n      stauts: failed\n');
    try {
      const r = await cli('test', 'flows/bad.test.yaml');
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/flows\/bad\.test\.yaml:5:7 .*stauts/);
    } finally {
      rmSync(inProject('flows/bad.test.yaml'));
    }
  });

  it('delivers scheduled replies and checks the local service state and events', async () => {
    writeFileSync(
      inProject('flows/replies.test.yaml'),
      `cases:
  - name: an audit sees a reply that arrives during the run
    flow: audit-outgoing
    start: "2026-01-05T12:00:00Z"
    replies:
      - { after: 0s, from: 79001112233, text: "yes please" }
    messages:
      - { chatId: 79001112233@c.us, type: outgoing, typeMessage: textMessage, textMessage: hello, timestamp: "2026-01-05T11:50:00Z", statusMessage: delivered }
    expect:
      status: succeeded
      run: { flow: audit-outgoing }
      events:
        - { type: run:started, trigger: manual }
        - { type: step:finished, step: audit, status: succeeded }
      local:
        outgoing: [{ chatId: 79001112233@c.us, textMessage: hello }]
        queue: { pending: { $count: 0 } }
        chats:
          79001112233@c.us:
            - { type: incoming, textMessage: "yes please" }
            - { type: outgoing, textMessage: hello }
`,
    );
    try {
      const r = await cli('test', 'flows/replies.test.yaml');
      expect(r.out).toContain('1 passed, 0 failed');
      // --filter: only matching cases run
      const none = await cli('test', 'flows/replies.test.yaml', '--filter', 'no such case');
      expect(none.out.trim().split('\n').at(-1)).toBe('0 passed, 0 failed');
      expect(none.code).toBe(1);
      expect(r.code).toBe(0);
    } finally {
      rmSync(inProject('flows/replies.test.yaml'));
    }
  });

  it('network: and instance: override only the keys they give; the config keeps the rest', async () => {
    writeFileSync(
      inProject('flows/override.test.yaml'),
      `cases:
  - name: config accounts stay when only a timing is overridden
    flow: check-leads
    network: { readAfterMs: 0 }
    instance: { checkAccountLimit: { numbers: 2 } }
    expect:
      steps:
        check: { output: { exists: 4, pauses: { $gte: 1 } } }
      elapsed: { atLeast: 2h }
`,
    );
    try {
      const r = await cli('test', 'flows/override.test.yaml');
      expect(r.out).toContain('1 passed, 0 failed');
    } finally {
      rmSync(inProject('flows/override.test.yaml'));
    }
  });

  it('msgflow validate ignores *.test.yaml next to the flows', async () => {
    const r = await cli('validate');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  });

  it('schema/flow-test.schema.json is up to date', () => {
    expect(readFileSync(path.join(ROOT, 'schema/flow-test.schema.json'), 'utf8')).toBe(renderFlowTestJsonSchema());
  });
});

describe('VirtualClock', () => {
  it('jumps to the earliest sleeper when nothing else runs, in order', async () => {
    const clock = new VirtualClock(0);
    clock.start();
    const woke: string[] = [];
    await Promise.all([
      clock.sleep(2 * 3600_000).then(() => woke.push(`2h@${clock.now()}`)),
      clock.sleep(1000).then(() => woke.push(`1s@${clock.now()}`)),
    ]);
    await clock.stop();
    expect(woke).toEqual(['1s@1000', '2h@7200000']);
  });

  it('does not jump while a hold is in place', async () => {
    const clock = new VirtualClock(0);
    const release = clock.hold();
    clock.start();
    let woke = false;
    const p = clock.sleep(60_000).then(() => (woke = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(woke).toBe(false);
    expect(clock.now()).toBe(0);
    release();
    await p;
    await clock.stop();
    expect(clock.now()).toBe(60_000);
  });
});
