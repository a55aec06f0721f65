/**
 * `msgflow runs prune`: deletes the finished runs older than --older-than
 * (or config.yaml's store.retention), says how many and of which flows;
 * --dry-run counts them; bad ages are usage errors (exit 2) that change
 * nothing; a store.retention under a day is refused at its line in config.yaml.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import type { RunStatus } from '../../src/store/types.js';
import { cli } from '../support/cli.js';
import { project } from '../support/project.js';

const DAY = 86_400_000;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const GREET = `name: greet
steps:
  - id: say
    uses: log
    with: { message: hello }
`;

function projectWith(storeExtra = ''): string {
  const dir = project({
    'config.yaml': `instances:
  default: { apiUrl: "http://127.0.0.1:9", idInstance: "1101000001", apiTokenInstance: never-called }
flowsDir: flows
store:
  driver: lowdb
  dir: .msgflow/state
${storeExtra}`,
    'flows/greet.yaml': GREET,
  });
  dirs.push(dir);
  return dir;
}

/** Runs as earlier days left them: `[id, flow, status, days ago]`. */
async function seed(dir: string, runs: Array<[string, string, RunStatus, number]>): Promise<void> {
  const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
  const now = Date.now();
  for (const [id, flow, status, ago] of runs) {
    const t = now - ago * DAY;
    await store.createRun({
      id,
      flow,
      status: 'running',
      trigger: 'manual',
      dryRun: false,
      startedAt: t - 1000,
      updatedAt: t,
      itemsDone: 0,
      itemsFailed: 0,
      resumes: 0,
    });
    await store.appendItems(id, [{ step: 'say', index: 0, status: 'succeeded', attempts: 1, finishedAt: t }]);
    await store.updateRun(id, status === 'waiting' ? { status } : { status, finishedAt: t });
  }
  await store.close();
}

const listed = async (dir: string) =>
  (JSON.parse((await cli(['runs', '--json', '--limit', '50'], dir)).stdout) as Array<{ id: string }>).map((r) => r.id).sort();

describe('msgflow runs prune', () => {
  it('deletes the finished runs older than --older-than, names how many per flow, and keeps the rest', async () => {
    const dir = projectWith();
    await seed(dir, [
      ['g-old', 'greet', 'succeeded', 40],
      ['g-failed', 'greet', 'failed', 35],
      ['gone-flow', 'removed-flow', 'succeeded', 50],
      ['g-new', 'greet', 'succeeded', 2],
      ['g-waiting', 'greet', 'waiting', 60],
    ]);
    const dry = await cli(['runs', 'prune', '--older-than', '30d', '--dry-run'], dir);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^would delete 3 finished runs that ended before \S+Z \(30d ago\): (greet 2, removed-flow 1|removed-flow 1, greet 2)\n$/,
    );
    expect(await listed(dir)).toHaveLength(5);

    // The runs of a flow no longer in flows/ can be pruned by name too.
    const one = await cli(['runs', 'prune', '--older-than', '30d', '--flow', 'removed-flow'], dir);
    expect(one.stdout).toMatch(/^deleted 1 finished run that ended before .*: removed-flow 1\n$/);
    const all = await cli(['runs', 'prune', '--older-than', '30d', '--json'], dir);
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject({
      deleted: 2,
      byFlow: { greet: 2 },
      dryRun: false,
      finishedBefore: expect.stringMatching(/Z$/),
    });
    expect(await listed(dir)).toEqual(['g-new', 'g-waiting']);
  });

  it('without --older-than it applies store.retention from config.yaml', async () => {
    const dir = projectWith('  retention: 7d\n');
    await seed(dir, [
      ['week-old', 'greet', 'succeeded', 8],
      ['yesterday', 'greet', 'succeeded', 1],
    ]);
    const r = await cli(['runs', 'prune'], dir);
    expect(r.stdout).toMatch(/^deleted 1 finished run that ended before .* \(7d ago\): greet 1\n$/);
    expect(await listed(dir)).toEqual(['yesterday']);
  });

  it('refuses, exit 2 and nothing deleted: no age at all, an age that is not one, under a day, an unknown flow, a run ID', async () => {
    const dir = projectWith();
    await seed(dir, [['old', 'greet', 'succeeded', 400]]);
    const cases: Array<[string[], RegExp]> = [
      [['runs', 'prune'], /runs prune needs --older-than \(e\.g\. 30d\), or store\.retention in config\.yaml/],
      [['runs', 'prune', '--older-than', 'a month'], /--older-than expects a duration such as 30d or 36h, got 'a month'/],
      [['runs', 'prune', '--older-than', '12h'], /--older-than 12h is too short: runs are kept at least 1d/],
      [['runs', 'prune', '--older-than', '30d', '--flow', 'nope'], /no flow named 'nope' \(flows: greet\)/],
      [['runs', 'prune', 'old'], /runs prune takes no run ID \(got 'old'\)/],
      [['runs', '--older-than', '30d'], /--older-than is an option of 'msgflow runs prune'/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args, dir);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
    }
    expect(await listed(dir)).toEqual(['old']);
  });

  it('a store.retention under a day, or not a duration, is a config error at its line', async () => {
    for (const [value, message] of [
      ['6h', 'expected at least 1d'],
      ['forever', 'expected a duration'],
    ]) {
      const dir = projectWith(`  retention: ${value}\n`);
      const r = await cli(['validate'], dir);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(new RegExp(`config\\.yaml:7:\\d+.*store\\.retention.*${message}`));
    }
  });
});
