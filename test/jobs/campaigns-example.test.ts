/**
 * The campaigns example of docs/campaigns.md (examples/campaigns): a named
 * pool of config.yaml used by name and with a change, and a health guard
 * whose thresholds trip on recipients without an account, on opt-outs and on
 * too few replies, as its flow tests say (`msgflow test`, in-process); what
 * `msgflow validate` says of a pool or instance name that is not config.yaml's;
 * and the docs page shows only YAML the tests run.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { PoolSchema } from '../../src/util/pool.js';
import { cli } from '../support/cli.js';
import { yamlBlocks, yamlContent as content } from '../support/docs.js';
import { startLocal, tempDir, type LocalUnderTest } from '../support/local-service.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = path.join(REPO, 'examples/campaigns');

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function exampleCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-campaigns-example-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(EXAMPLE, dir, { recursive: true });
  return dir;
}

describe('the campaigns example', () => {
  it('passes its flow tests: a named pool, paused by noAccount, by opt-outs, and by too few replies', { timeout: 120_000 }, async () => {
    const r = await cli(['test', '--json'], exampleCopy());
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { passed: number; failed: number; results: { name: string; passed: boolean }[] };
    expect(out).toMatchObject({ passed: 3, failed: 0 });
    expect(r.code).toBe(0);
  });

  it('msgflow validate names an unknown pool of a step and an unknown instance of a pool, with their file:line:col and a did-you-mean', async () => {
    const dir = exampleCopy();
    expect((await cli(['validate'], dir)).code).toBe(0);
    const flow = path.join(dir, 'flows/newsletter.yaml');
    writeFileSync(
      flow,
      readFileSync(flow, 'utf8')
        .replace('pool: marketing', 'pool: marketting')
        .replace('noAccount: { maxShare: 0.2, window: 20, minSample: 10 }', 'noAccount: { maxShare: 0.2, window: 20, minSample: 30 }'),
    );
    const test = path.join(dir, 'flows/newsletter.test.yaml');
    writeFileSync(test, readFileSync(test, 'utf8').replace('flows: [campaign-watch]', 'flows: [campaign-wach]'));
    const digest = path.join(dir, 'flows/digest.yaml');
    writeFileSync(digest, readFileSync(digest, 'utf8').replace('pool: { use: marketing,', 'pool: { use: sales,'));
    const bad = await cli(['validate'], dir);
    expect(bad.code).not.toBe(0);
    const out = bad.stdout + bad.stderr;
    expect(out).toMatch(
      /flows\/newsletter\.yaml:17:13 steps\[0\]\.with\.pool: unknown pool 'marketting' \(did you mean 'marketing'\?\): config\.yaml pools declares marketing/,
    );
    // A case's other flow that is no flow of the project.
    expect(out).toMatch(
      /flows\/newsletter\.test\.yaml:\d+:\d+ cases\[0\]\.flows\[0\]: no flow named 'campaign-wach' in flows \(did you mean 'campaign-watch'\?\)/,
    );
    // A threshold that could never trip, at its own position.
    expect(out).toMatch(
      /flows\/newsletter\.yaml:\d+:\d+ steps\[0\]\.with\.guard\.noAccount\.minSample: minSample must not exceed window \(it could never trip\)/,
    );
    expect(out).toMatch(
      /flows\/digest\.yaml:16:20 steps\[0\]\.with\.pool\.use: unknown pool 'sales': config\.yaml pools declares marketing/,
    );

    const config = path.join(dir, 'config.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace('instances: [default, second]', 'instances: [default, secnd]'));
    const badConfig = await cli(['validate'], dir);
    expect(badConfig.stdout + badConfig.stderr).toMatch(
      /config\.yaml:12:26 pools\.marketing\.instances\[1\]: unknown instance 'secnd' \(did you mean 'second'\?\): instances declares default, second/,
    );
  });
});

describe('a step naming a pool of config.yaml', () => {
  let local: LocalUnderTest | undefined;
  afterEach(async () => {
    await local?.close();
    local = undefined;
  });

  it('sends from the named pool with the changes the step gives; a name config.yaml does not have fails the step, naming the field', async () => {
    const dir = await tempDir();
    local = await startLocal({ dir });
    const pools = { marketing: PoolSchema.parse({ instances: ['a'], dailyCap: 500 }) };
    const t = () =>
      createActionTestContext({
        client: local!.client,
        baseDir: dir,
        instance: { name: 'a', identity: 'inst-a' },
        instances: { a: local!.client },
        pools,
      });
    const input = { recipients: [79001112233], message: { text: 'hi' }, follow: { deadline: 0 }, report: 'reports/p.csv' };
    await expect(runAction(messagesBroadcast, t(), { ...input, pool: 'sales' })).rejects.toThrow(
      /pool: no pool 'sales' in config\.yaml \(its pools: marketing\)/,
    );
    const s = await runAction(messagesBroadcast, t(), { ...input, pool: { use: 'marketing', dailyCap: 1 } });
    expect(s).toMatchObject({ sent: 1 });
    expect(readFileSync(path.join(dir, 'reports/p.csv'), 'utf8')).toContain(',a,');
  });
});

describe('docs/campaigns.md', () => {
  it('plan, then apply: the plan the page shows is what msgflow run --plan prints for the example; apply of a changed input is refused as it says', async () => {
    const dir = exampleCopy();
    const doc = readFileSync(path.join(REPO, 'docs/campaigns.md'), 'utf8');
    const r = await cli(['run', 'newsletter', '--plan', 'plans/march.json'], dir);
    expect(r.code, r.stderr).toBe(0);
    for (const line of [
      'plan: 3 recipients planned; plans/march.json',
      'per instance: default 2, second 1',
      'per variant: default 3',
      'skipped: none',
    ]) {
      expect(r.stdout, line).toContain(line);
      expect(doc, line).toContain(line);
    }
    const first = readFileSync(path.join(dir, 'plans/march.json'), 'utf8').split('\n')[1]!;
    expect(doc).toContain(first.replace(/"at":"[^"]+"/, '"at":"2026-03-02T09:00:00.000Z"'));
    writeFileSync(path.join(dir, 'data/newsletter.csv'), 'phone,firstName\n79030000001,Ann\n');
    const refused = await cli(['apply', 'plans/march.json'], dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /: plans\/march\.json is out of date: data\/newsletter\.csv changed since it was made \(\S+\); make a new one with 'msgflow run newsletter --plan plans\/march\.json'/,
    );
  });

  it('shows only YAML that is part of a tested file of the repository, as written there', () => {
    const doc = readFileSync(path.join(REPO, 'docs/campaigns.md'), 'utf8');
    const blocks = yamlBlocks(doc);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const files = [
      'flows/spring-campaign.yaml',
      'flows/spring-campaign.test.yaml',
      'flows/campaign-watch.yaml',
      'examples/campaigns/config.yaml',
      'examples/campaigns/flows/newsletter.yaml',
      'examples/campaigns/flows/digest.yaml',
      'examples/campaigns/flows/newsletter.test.yaml',
    ];
    const tested = files.map((f) => content(readFileSync(path.join(REPO, f), 'utf8')));
    for (const block of blocks)
      expect(
        tested.some((t) => t.includes(content(block))),
        block.slice(0, 120),
      ).toBe(true);
  });
});
