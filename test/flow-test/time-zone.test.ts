/**
 * A flow test case's `timezone` is its clock's: what a daily send window
 * without a timezone means in that case, and in no other. Cases running at
 * the same time in one process (an embedding program, a test runner) each
 * keep their own zone, and the process's TZ is never touched.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { registryFor, runFlowTestCase } from '../../src/runtime/flow-test/run.js';
import { loadFlowTestFile } from '../../src/runtime/flow-test/suite.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let dir: string;

/** A copy of the repository's example project: broadcast-file sends inside a 09:00-18:00 window that names no timezone. */
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'msgflow-zone-'));
  for (const e of ['config.yaml', 'flows', 'data', 'plugins', 'public']) cpSync(path.join(ROOT, e), path.join(dir, e), { recursive: true });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("a flow test case's time zone", () => {
  it('belongs to the case: two cases in different zones run at the same time in one process, each in its own', async () => {
    const config = loadConfig(path.join(dir, 'config.yaml'));
    const registry = await registryFor(config);
    const file = path.join(dir, 'flows/broadcast-file.test.yaml');
    const { cases } = loadFlowTestFile(file, dir);
    const base = cases.find((c) => c.name.startsWith('sends the brochure inside the 09:00-18:00 window'))!;
    // Both start at Monday 07:00 UTC: before the window in UTC (it waits 2 h), inside it in Tokyo (16:00: it sends at once).
    const utc = { ...base, name: 'UTC', timezone: 'UTC', expect: { ...base.expect, elapsed: { atLeast: '2h' } } };
    const tokyo = { ...base, name: 'Tokyo', timezone: 'Asia/Tokyo', expect: { ...base.expect, elapsed: { atMost: '30m' } } };
    const tzBefore = process.env.TZ;
    const [a, b] = await Promise.all([runFlowTestCase(config, registry, file, utc), runFlowTestCase(config, registry, file, tokyo)]);
    expect(process.env.TZ).toBe(tzBefore);
    expect({ error: a.error, mismatches: a.mismatches }).toEqual({ error: undefined, mismatches: [] });
    expect({ error: b.error, mismatches: b.mismatches }).toEqual({ error: undefined, mismatches: [] });
    expect(a.virtualMs).toBeGreaterThanOrEqual(2 * 3_600_000);
    expect(b.virtualMs).toBeLessThan(30 * 60_000);
  });
});
