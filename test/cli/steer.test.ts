/**
 * Steering runs through the CLI in-process: explicit resume, one live run of
 * a flow, dead runs shown interrupted, runs show/cancel/retry, pauses, usage
 * exit codes.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import type { RunRecord } from '../../src/store/types.js';
import { CHECK_ACCOUNT_PAUSE } from '../../src/actions/check-account-bulk.js';
import { raisePause } from '../../src/engine/run/pauses.js';
import { runCli } from '../../src/cli/main.js';
import { captureIo, cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { project, remoteConfig } from '../support/project.js';

const CONFIG = remoteConfig('steer-test-token-7c2d');

const GREET = `name: greet
inputs:
  who: { default: world }
steps:
  - id: hello
    uses: log
    with: { message: "hello \${{ inputs.who }}" }
`;

const EACH = `name: each
inputs:
  items: { value: [1, { bad: true }, 3] }
steps:
  - id: say
    uses: log
    forEach: \${{ inputs.items }}
    with: { message: "\${{ item }}" }
`;

const stateOf = (dir: string) => createLowdbStore({ dir: join(dir, '.msgflow/state') });

async function lastRun(dir: string): Promise<RunRecord> {
  const store = stateOf(dir);
  try {
    return (await store.listRuns({ limit: 1 }))[0]!;
  } finally {
    await store.close();
  }
}

/** Turns a finished run into one a Ctrl-C would have left (interrupted, resumable). */
async function interrupt(dir: string, id: string, status: RunRecord['status'] = 'interrupted'): Promise<void> {
  const store = stateOf(dir);
  await store.updateRun(id, { status, finishedAt: undefined, durationMs: undefined });
  await store.close();
}

describe('explicit resume', () => {
  it('an unfinished run is resumed only with the same inputs; other inputs exit 2 naming it, --resume and runs cancel', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet', '-i', 'who=alice'], dir)).code).toBe(0);
    const first = await lastRun(dir);
    await interrupt(dir, first.id);

    const other = await cli(['run', 'greet', '-i', 'who=bob'], dir);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`run ${first.id} of greet is unfinished`);
    expect(other.stderr).toContain('with other inputs');
    expect(other.stderr).toContain(`msgflow run greet --resume ${first.id}`);
    expect(other.stderr).toContain(`msgflow runs cancel ${first.id}`);

    const same = await cli(['run', 'greet', '-i', 'who=alice'], dir);
    expect(same.code).toBe(0);
    expect(same.stderr).toContain(`resuming run ${first.id}`);
    expect((await lastRun(dir)).id).toBe(first.id);

    await interrupt(dir, first.id);
    const fresh = await cli(['run', 'greet', '-i', 'who=bob', '--new'], dir);
    expect(fresh.code).toBe(0);
    expect((await lastRun(dir)).id).not.toBe(first.id);
    const explicit = await cli(['run', 'greet', '--resume', first.id], dir);
    expect(explicit.code).toBe(0);
    expect(explicit.stderr).toContain(`resuming run ${first.id}`);
  });

  it('a changed flow file is not resumed silently', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const first = await lastRun(dir);
    await interrupt(dir, first.id);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'flows/greet.yaml'), GREET.replace('hello', 'hi'));
    const r = await cli(['run', 'greet'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('with another version of the flow file');
  });
});

describe('runs and their owners', () => {
  it('a run whose owner process is gone shows interrupted in runs and runs show, not running', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const r = await lastRun(dir);
    await interrupt(dir, r.id, 'running'); // what kill -9 or an EPIPE death leaves
    const list = await cli(['runs'], dir);
    expect(list.stdout).toMatch(new RegExp(`${r.id}\\s+greet\\s+interrupted`));
    const json = JSON.parse((await cli(['runs', '--json'], dir)).stdout) as RunRecord[];
    expect(json[0]!.status).toBe('interrupted');
    const show = await cli(['runs', 'show', r.id], dir);
    expect(show.stdout).toContain('status:    interrupted');
  });

  it('msgflow run while a run of the flow is live elsewhere exits 2 naming its pid and host; --wait waits for it', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const r = await lastRun(dir);
    await interrupt(dir, r.id, 'running');
    // Its owner: a live process on another host.
    const store = stateOf(dir);
    const lease = { token: 'other-host', pid: 4321, host: 'host-b', acquiredAt: Date.now(), expiresAt: Date.now() + 60_000, runId: r.id };
    expect(await store.acquireLease(`run:${r.id}`, lease)).toBeUndefined();
    const busy = await cli(['run', 'greet'], dir);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`run ${r.id} of greet is live in pid 4321 on host host-b`);
    expect(busy.stderr).toContain('--wait');
    // --wait: the other host finishes the run a little later.
    const io = captureIo({ cwd: dir });
    const waiting = runCli(['run', 'greet', '--wait'], io);
    await waitFor('the second run to wait', () => io.stderrText().includes('waiting for it to end'));
    await store.updateRun(r.id, { status: 'succeeded', finishedAt: Date.now() });
    await store.releaseLease(`run:${r.id}`, 'other-host');
    await store.close();
    expect(await waiting).toBe(0);
    expect((await lastRun(dir)).id).not.toBe(r.id);
  });

  it('runs show lists inputs, steps with counts, failed items with errors and the log lines; --json too', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/each.yaml': EACH });
    const run = await cli(['run', 'each'], dir);
    expect(run.code).toBe(1); // one item failed
    const r = await lastRun(dir);
    const show = await cli(['runs', 'show', r.id], dir);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('inputs:    {"items":[1,{"bad":true},3]}');
    expect(show.stdout).toMatch(/say \(log\): failed \(3 items\): 2 done, 1 failed; /);
    expect(show.stdout).toContain('  items:     2 done, 1 failed\n');
    expect(show.stdout).toMatch(/failed items:\n\s+say\[1\] after 0 attempt\(s\): step 'say' item 1: with\.message/);
    expect(show.stdout).toMatch(/INFO 1\n.*INFO 3/);
    const json = JSON.parse((await cli(['runs', 'show', r.id, '--json'], dir)).stdout);
    expect(json.failedItems).toHaveLength(1);
    expect(json.log.map((l: { message: string }) => l.message)).toEqual(['1', '3']);
    expect(json.steps[0]).toMatchObject({ step: 'say', done: 2, failed: 1 });
  });

  it('runs cancel: a run that is not executing becomes cancelled at once and is never resumed', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const r = await lastRun(dir);
    await interrupt(dir, r.id);
    const c = await cli(['runs', 'cancel', r.id], dir);
    expect(c.code).toBe(0);
    expect(c.stdout).toContain(`run ${r.id}: cancelled`);
    const again = await cli(['run', 'greet', '-i', 'who=bob'], dir);
    expect(again.code).toBe(0); // nothing unfinished any more
  });
});

describe('runs retry and waiting', () => {
  it('runs retry ID starts a new run that redoes only the failed items', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/each.yaml': EACH });
    expect((await cli(['run', 'each'], dir)).code).toBe(1);
    const first = await lastRun(dir);
    const retry = await cli(['runs', 'retry', first.id], dir);
    expect(retry.code).toBe(1); // item 1 is still invalid
    expect(retry.stderr).toContain(`retries the failed items of ${first.id}`);
    const second = await lastRun(dir);
    expect(second).toMatchObject({ retryOf: first.id, itemsDone: 2, itemsFailed: 1 });
    const json = JSON.parse((await cli(['runs', 'show', second.id, '--json'], dir)).stdout);
    expect(json.log).toEqual([]); // items 0 and 2 (which log) were carried over, not redone
    expect(json.failedItems.map((f: { index: number }) => f.index)).toEqual([1]);
  });

  it('runs retry of a succeeded run says there is nothing to retry, exits 2, and starts no run', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const first = await lastRun(dir);
    const retry = await cli(['runs', 'retry', first.id], dir);
    expect(retry.code).toBe(2);
    expect(retry.stderr).toContain(`run ${first.id} succeeded: nothing to retry ('msgflow run greet' starts a new run)`);
    expect(retry.stdout).toBe('');
    expect((await lastRun(dir)).id).toBe(first.id);
  });

  it('a waiting run shows when the wait ends and its reason, never an ETA; a long reason is cut to 80 columns, never the end', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    expect((await cli(['run', 'greet'], dir)).code).toBe(0);
    const r = await lastRun(dir);
    const until = Date.now() + (1 * 3600 + 52 * 60 + 30) * 1000;
    const store = stateOf(dir);
    await store.updateRun(r.id, {
      status: 'waiting',
      waitingUntil: until,
      // a reason as long as the ones that made the STATUS column 150 characters wide
      waitReason: `checkAccount paused by rate_limit_exceeded (retryAfter 2h) ${'and a lot more to say '.repeat(4)}`,
      finishedAt: undefined,
    });
    await store.acquireLease(`run:${r.id}`, { token: 't', pid: 1, host: 'host-b', acquiredAt: Date.now(), expiresAt: Date.now() + 60_000 });
    await store.close();
    const hhmm = new Date(until).toISOString().slice(11, 16);
    const list = await cli(['runs'], dir);
    const [header, row, detail] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^RUN +FLOW +STATUS +STARTED \(UTC\) +DURATION +ITEMS$/);
    expect(row).toMatch(/ greet +waiting +\d{4}-/);
    expect(detail).toMatch(new RegExp(`^  waiting until ${hhmm}Z \\(1h5[23]m\\): checkAccount paused by rate_limit_exceeded .*…$`));
    expect(detail!.length).toBe(80);
    const show = await cli(['runs', 'show', r.id], dir);
    expect(show.stdout).toMatch(new RegExp(`\n  status:    waiting until ${hhmm}Z \\(1h5[23]m\\): checkAccount paused by rate_limit.*…\n`));
    for (const line of show.stdout.split('\n').filter((l) => l.includes('waiting until'))) expect(line.length).toBeLessThanOrEqual(80);
    expect(show.stdout).toContain('owner:     pid 1 on host host-b');
  });
});

describe('pauses', () => {
  it('msgflow pauses lists instance-wide pauses, each saying its end once and its reason once within 80 columns; pauses lift INSTANCE lifts one', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    const store = stateOf(dir);
    // the record as the one writer makes it (checkAccount.bulk and the workers)
    const since = Date.now();
    const { until } = await raisePause(store, { name: 'default', identity: 'inst-abc123' }, CHECK_ACCOUNT_PAUSE, {
      since,
      minMs: 2 * 3600_000,
      retryAfterMs: 7_200_000,
    });
    await store.close();
    const list = await cli(['pauses'], dir);
    expect(list.code).toBe(0);
    const hhmm = new Date(until).toISOString().slice(11, 16);
    expect(list.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^INSTANCE +SCOPE +UNTIL +REASON$/),
      expect.stringMatching(new RegExp(`^default +checkAccount +${hhmm}Z \\((1h59m|2h00m)\\) +rate_limit_exceeded \\(retryAfter 2h\\)$`)),
      'lift with: msgflow pauses lift default',
    ]);
    const lift = await cli(['pauses', 'lift', 'default'], dir);
    expect(lift.code).toBe(0);
    expect(lift.stdout).toContain('lifted: default (inst-abc123) checkAccount; runs waiting on it call the instance again at once');
    expect((await cli(['pauses'], dir)).stdout).toContain('no pauses');
    const none = await cli(['pauses', 'lift', 'nosuch'], dir);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no pause for instance 'nosuch'");
  });
});

describe('usage', () => {
  it('runs --flow nosuch exits 2; an unknown -i key exits 2; run --help lists every flag', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/greet.yaml': GREET });
    const nosuch = await cli(['runs', '--flow', 'nosuch'], dir);
    expect(nosuch.code).toBe(2);
    expect(nosuch.stderr).toContain("no flow named 'nosuch' (flows: greet)");
    const badInput = await cli(['run', 'greet', '-i', 'whom=x'], dir);
    expect(badInput.code).toBe(2);
    expect(badInput.stderr).toContain("flow 'greet' has no input 'whom' (did you mean 'who'?)");
    const help = await cli(['run', '--help'], dir);
    for (const flag of ['--input', '--dry-run', '--new', '--resume', '--wait', '--json', '--config']) expect(help.stdout).toContain(flag);
    const runsHelp = await cli(['runs', '--help'], dir);
    for (const word of ['show ID', 'cancel ID', 'retry ID', '--flow', '--limit', '--json']) expect(runsHelp.stdout).toContain(word);
  });
});
