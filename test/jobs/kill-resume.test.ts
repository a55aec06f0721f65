import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { ID, MODULES, TOKEN, runImport, storedContacts } from './fixtures/import-child.js';
import { ratesOff, tempDir, writeData } from '../support/local-service.js';
import { srcModuleForChild } from '../support/spawn.js';

/** The killed process, plain JavaScript on the modules of dist/ when fresh (else src/ through tsx). */
const CHILD = fileURLToPath(new URL('./fixtures/import-child.mjs', import.meta.url));
const CHILD_MODULES = MODULES.map((rel) => [rel, srcModuleForChild(rel)] as const);
const CHILD_ARGS = [
  ...CHILD_MODULES[0]![1].execArgv,
  CHILD,
  JSON.stringify(Object.fromEntries(CHILD_MODULES.map(([rel, m]) => [rel, m.url]))),
];

/**
 * Records in the file: enough that the kill lands mid-file, with hundreds
 * of records on each side of it. The same kill at real sizes (and its
 * figures) is bench/jobs.ts; MSGFLOW_KILL_RECORDS=20000 runs this test at that size.
 */
const N = Number(process.env.MSGFLOW_KILL_RECORDS ?? 900);

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const phone = (i: number) => 79200000000 + i;

describe('kill -9 in the middle of a bulk job, then resume', () => {
  // One record at a time (what pacing imposes) and many in flight (calls overlapping the kill, journal entries not yet durable).
  for (const inFlight of [1, 32])
    it(`contacts.import over ${N} records, ${inFlight} in flight: every record processed exactly once (journal, service, report, summary)`, async () => {
      dir = await tempDir('msgflow-jobs-kill-');
      const rows = ['phone,firstName'];
      for (let i = 0; i < N; i++) rows.push(`${phone(i)},N${i}`);
      await writeData(dir, 'data/contacts.csv', rows.join('\n') + '\n');
      const rates = ratesOff();
      const accounts = Array.from({ length: N }, (_, i) => ({ phone: phone(i) }));
      await writeData(
        dir,
        'local.json',
        JSON.stringify({
          port: 0,
          dataDir: 'local-data',
          network: { accounts },
          instances: [{ idInstance: ID, apiTokenInstance: TOKEN, rateLimits: rates }],
        }),
      );

      // ---- a process killed with SIGKILL a third of the way in
      const proc = spawn(process.execPath, [...CHILD_ARGS, dir, 'kill-run', String(inFlight)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      proc.stderr.on('data', (d) => (err += d));
      const exited = new Promise<NodeJS.Signals | null>((r) => proc.on('exit', (_c, s) => r(s)));
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on('data', (d: Buffer) => {
          const m = /done (\d+)\n(?![\s\S]*done)/.exec(d.toString());
          if (m && Number(m[1]) >= N / 3) resolve();
        });
        proc.on('exit', () => reject(new Error(`the child ended before it was killed: ${err}`)));
      });
      proc.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      // ---- resume in this process over the same state and service data
      const summary = await runImport(dir, 'kill-run', inFlight);
      expect(summary).toMatchObject({ total: N, added: N, updated: 0, alreadyExists: 0, failed: 0, invalid: 0, duplicates: 0 });

      // the journal holds one entry per record, each record once, all added
      const store = createLowdbStore({ dir: path.join(dir, 'state') });
      const seen = new Map<string, number>();
      for await (const e of store.readJournal<{ k: string; o: string }>('kill-run', 'job/-')) {
        expect(e.o).toBe('added');
        seen.set(e.k, (seen.get(e.k) ?? 0) + 1);
      }
      await store.close();
      expect(seen.size).toBe(N);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);

      // the service holds every contact once
      const stored = await storedContacts(dir);
      expect(stored).toHaveLength(N);
      expect(new Set(stored).size).toBe(N);

      // the report: one row per record
      const report = (await readFile(path.join(dir, 'reports/import.csv'), 'utf8')).trimEnd().split('\r\n');
      expect(report).toHaveLength(N + 1);
      expect(new Set(report.slice(1).map((l) => l.split(',')[1])).size).toBe(N);
    }, 600_000);
});
