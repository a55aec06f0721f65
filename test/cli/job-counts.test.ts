/**
 * One set of counters: the repo's check-leads flow on its data/leads.csv (14
 * rows: 4 with an account, 4 without, 4 invalid, 2 duplicates) through
 * `msgflow run`, as a user runs it. Its start line, progress line, end line,
 * run summary, `msgflow runs`, the run and step records and the events all say
 * the same counts.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project } from '../support/project.js';

const repoFile = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');

/** The demo's network (config.yaml), without its port and plugins. */
const CONFIG = `instances:
  default:
    apiUrl: local
local:
  port: 0
  network:
    accounts:
      - { phone: 79001112233, username: "@alice", name: Alice }
      - { phone: 79002223344, username: "@bob", name: Bob }
      - { phone: 79003334455, name: Carol }
      - { phone: 79004445566, username: "@dave", name: Dave }
      - { phone: 79005550000, hidden: true }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: counts-test-token-5e1d
      rateLimits: { checkAccount: 0 }
`;

/** The repo's flow as it is, unpaced (the demo's 1 s between checks only costs the test time). */
const FLOW = repoFile('flows/check-leads.yaml').replace('pace: { delay: 1s, jitter: 0.3 }', 'pace: { delay: 0 }');

describe('the counters of a job, the same everywhere', () => {
  it('check-leads on data/leads.csv: the start line says 14 items; bar, end line, summary, msgflow runs, records and events say 8 done, 4 invalid, 2 duplicate', async () => {
    expect(FLOW).toContain('pace: { delay: 0 }');
    const dir = project({ 'config.yaml': CONFIG, 'flows/check-leads.yaml': FLOW, 'data/leads.csv': repoFile('data/leads.csv') });
    const r = await cli(['run', 'check-leads'], dir);
    expect(r.code, r.stderr).toBe(0);
    const counts = '8 done, 4 invalid, 2 duplicate';
    expect(r.stderr).toContain('check-leads/check started (checkAccount.bulk, 14 items)');
    expect(r.stderr).not.toMatch(/check-leads\/check started .*1 item\b/);
    // the progress line at the step's end: the bar is full, the others are their own counts
    expect(r.stderr).toContain(`check-leads check: 14/14 (${counts})`);
    expect(r.stderr).toContain(`check-leads/check succeeded (14 items): ${counts}`);
    // the run: the check's records and the summary step (one item)
    expect(r.stderr).toMatch(/check-leads \(run \S+\) finished in \S+: 9 done, 4 invalid, 2 duplicate/);
    expect(r.stdout).toContain(`  check (checkAccount.bulk): succeeded (14 items): ${counts}`);

    const table = await cli(['runs'], dir);
    expect(table.stdout).toMatch(/^RUN +FLOW +STATUS +STARTED \(UTC\) +DURATION +ITEMS$/m);
    expect(table.stdout).toMatch(/check-leads +succeeded .* 9 done, 4 invalid, 2 duplicate$/m);
    const [run] = JSON.parse((await cli(['runs', '--json'], dir)).stdout);
    expect(run).toMatchObject({ itemsDone: 9, itemsFailed: 0, itemsInvalid: 4, itemsDuplicate: 2, itemsSkipped: 0 });
    const shown = JSON.parse((await cli(['runs', 'show', run.id, '--json'], dir)).stdout);
    expect(shown.steps[0]).toMatchObject({ step: 'check', total: 14, done: 8, failed: 0, invalid: 4, duplicate: 2 });
    expect((await cli(['runs', 'show', run.id], dir)).stdout).toContain(`check (checkAccount.bulk): succeeded (14 items): ${counts};`);

    // the events, as a program (the dashboard, --json-logs) reads them: answered from the cache this time, same counts
    const json = await cli(['run', 'check-leads', '--json-logs'], dir);
    const events = json.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const of = (name: string) => events.find((e) => e.event === name && e.step === 'check');
    expect(of('step:started')).toMatchObject({ total: 14 });
    expect(of('step:finished')).toMatchObject({ status: 'succeeded', total: 14, done: 8, failed: 0, invalid: 4, duplicate: 2 });
    expect(events.find((e) => e.event === 'run:finished')).toMatchObject({ itemsDone: 9, itemsInvalid: 4, itemsDuplicate: 2 });
  });

  it('check-leads streams data/leads.csv into its job: each report line names its row as file:line, a duplicate names the line of the row that wins', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/check-leads.yaml': FLOW, 'data/leads.csv': repoFile('data/leads.csv') });
    const r = await cli(['run', 'check-leads'], dir);
    expect(r.code, r.stderr).toBe(0);
    const report = parseCsv(readFileSync(path.join(dir, 'reports/check-leads.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
    // the file has a header line: its 14 rows stand on lines 2 to 15
    expect(report.map((row) => row.where).sort()).toEqual(Array.from({ length: 14 }, (_, i) => `data/leads.csv:${i + 2}`).sort());
    expect(report.find((row) => row.where === 'data/leads.csv:3')).toMatchObject({ phone: '79002223344', status: 'exists' });
    expect(report.find((row) => row.where === 'data/leads.csv:11')).toMatchObject({
      status: 'duplicate',
      error: 'duplicate of data/leads.csv:3',
    });
    // the run keeps the file's name, not its rows: they are read once, by the job
    const [run] = JSON.parse((await cli(['runs', '--json'], dir)).stdout);
    const shown = JSON.parse((await cli(['runs', 'show', run.id, '--json'], dir)).stdout);
    expect(shown.inputs).toEqual({ leads: 'data/leads.csv' });
  });

  it('a job stopped by failures in a row: the stop reason, the end line, msgflow runs and the run record say the same number failed', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      const config = `instances:\n  default:\n    apiUrl: http://127.0.0.1:${port}\n    idInstance: "1101000001"\n    apiTokenInstance: counts-test-token-5e1d\n    retries: 0\n    rateLimit: false\n`;
      const dir = project({ 'config.yaml': config, 'flows/check-leads.yaml': FLOW, 'data/leads.csv': repoFile('data/leads.csv') });
      const r = await cli(['run', 'check-leads'], dir);
      expect(r.code).toBe(1);
      // the first five numbers fail (the default maxConsecutiveFailures): the fifth stops the job and is one of them
      expect(r.stderr).toMatch(
        /check-leads\/check failed \(14 items\): 0 done, 5 failed: checkAccount\.bulk stopped: 5 calls in a row failed/,
      );
      expect((await cli(['runs'], dir)).stdout).toMatch(/check-leads +failed .* 0 done, 5 failed$/m);
      const [run] = JSON.parse((await cli(['runs', '--json'], dir)).stdout);
      expect(run).toMatchObject({ status: 'failed', itemsDone: 0, itemsFailed: 5 });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
