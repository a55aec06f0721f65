/** `executor:` in config.yaml: bullmq needs the redis store, and says where. No Redis needed. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

async function projectWith(config: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-executor-config-'));
  await writeFile(path.join(dir, 'config.yaml'), config);
  return dir;
}

describe('config.yaml executor:', () => {
  it('bullmq with a lowdb store is an error naming config.yaml:line:col of executor.driver', async () => {
    const dir = await projectWith(`instances: {}
store:
  driver: lowdb
executor:
  driver: bullmq
`);
    const r = await cli(['worker'], dir);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/config\.yaml:5:11/);
    expect(r.stderr).toContain("executor driver 'bullmq' needs store: { driver: redis }");
  });

  it('an unknown driver and a bad url are named with their place', async () => {
    const dir = await projectWith(`executor:
  driver: kafka
  url: http://localhost
`);
    const r = await cli(['validate'], dir);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/config\.yaml:2:11/);
    expect(r.stdout + r.stderr).toMatch(/config\.yaml:3:8.*redis:\/\//);
  });

  it('msgflow worker with the local executor is a usage error that says what to set', async () => {
    const dir = await projectWith('instances: {}\n');
    const r = await cli(['worker'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('msgflow worker needs executor: { driver: bullmq }');
  });

  it('msgflow worker --concurrency must be a positive integer', async () => {
    const dir = await projectWith('instances: {}\n');
    const r = await cli(['worker', '--concurrency', 'zero'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--concurrency expects a positive integer');
  });
});
