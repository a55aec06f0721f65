/**
 * Data files named over the token-free API: a file input takes files from its
 * data folders only (never config.yaml, the store's files, or a link out of
 * data/), and a run page never previews a data file from elsewhere (a -i path
 * on the command line).
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/output.js';
import { defaultHostId, LeaseOwner } from '../../src/engine/run/ownership.js';
import { recordDaemonUi } from '../../src/runtime/daemon/address.js';
import { INPUT_NOT_SHOWN } from '../../src/ui/api.js';
import { waitFor } from '../support/wait.js';
import { get, post, startProject, type Project } from './helpers.js';

const FILES_FLOW = `name: files
inputs:
  leads: { file: data/leads.csv }
steps:
  - id: count
    uses: log
    with: { message: "\${{ length(inputs.leads) }} leads" }
`;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function filesProject(opts: { token?: string } = {}): Promise<Project> {
  const p = await startProject(opts.token ? { token: opts.token, extraConfig: `ui:\n  token: ${opts.token}\n` } : {});
  cleanups.push(() => p.close());
  mkdirSync(path.join(p.dir, 'data'));
  mkdirSync(path.join(p.dir, 'secret'));
  writeFileSync(path.join(p.dir, 'data/leads.csv'), 'phone\n79001112233\n');
  writeFileSync(path.join(p.dir, 'data/more.csv'), 'phone\n79002223344\n79003334455\n');
  writeFileSync(path.join(p.dir, 'secret/people.csv'), 'phone,note\n79009998877,SECRET-ROW\n');
  writeFileSync(path.join(p.dir, 'flows/files.yaml'), FILES_FLOW);
  return p;
}

async function finished(p: Project, runId: string) {
  return waitFor(`run ${runId} to end`, async () => {
    const r = await get(`${p.url}/api/runs/${encodeURIComponent(runId)}`);
    return r.body?.run?.status === 'succeeded' ? r : undefined;
  });
}

describe('data files over the API', () => {
  it('a file input takes a file of its data folders, and refuses config.yaml, the store, other folders and a link out of data/', async () => {
    const p = await filesProject();
    symlinkSync(path.join(p.dir, 'config.yaml'), path.join(p.dir, 'data/link.yaml'));
    const ok = await post(`${p.url}/api/flows/files/runs`, { inputs: { leads: 'data/more.csv' } });
    expect(ok.status).toBe(201);
    const detail = await finished(p, ok.body.runId);
    expect(detail.body.inputs.leads).toEqual([{ phone: '79002223344' }, { phone: '79003334455' }]);

    for (const file of [
      'config.yaml',
      '.msgflow/state/runs.json',
      'secret/people.csv',
      'data/link.yaml',
      'data/../config.yaml',
      '/etc/passwd',
    ]) {
      const r = await post(`${p.url}/api/flows/files/runs`, { inputs: { leads: file } });
      expect(r.status, file).toBe(400);
      expect(r.body.error, file).toEqual({
        code: 'UI_BAD_REQUEST',
        field: 'inputs.leads',
        message: `inputs.leads: a data file given over the API must be in the input's data folders (data/), got '${file}'`,
      });
    }
  });

  it('a run page previews the declared file, never a -i file outside the data folders (run beside the daemon, which leaves it here)', async () => {
    const token = 'data-files-ui-token-31';
    const p = await filesProject({ token });
    const owner = new LeaseOwner({ store: p.runtime.store, hostId: defaultHostId(), ttlMs: 30_000 }, { label: 'msgflow start' });
    expect((await owner.claim('daemon')).ok).toBe(true);
    cleanups.push(() => owner.release());
    await recordDaemonUi(p.runtime.store, { url: p.url, pid: process.pid, host: defaultHostId(), startedAt: Date.now() });

    // The declared file: shown.
    const declared = await post(`${p.url}/api/flows/files/runs`, {}, { authorization: `Bearer ${token}` });
    expect(declared.status).toBe(201);
    expect((await finished(p, declared.body.runId)).body.inputs.leads).toEqual([{ phone: '79001112233' }]);

    // A terminal's -i file elsewhere: the run executes in the terminal's process, and its page does not show the file.
    const err: string[] = [];
    const out: string[] = [];
    const stderr = new PassThrough();
    stderr.on('data', (c: Buffer) => err.push(c.toString('utf8')));
    const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), stdout: new PassThrough(), stderr };
    const config = path.join(p.dir, 'config.yaml');
    const code = await runCli(['run', 'files', '-c', config, '--json', '-i', `leads=${path.join(p.dir, 'secret/people.csv')}`], io);
    expect(code, err.join('')).toBe(0);
    expect(err.join('')).toMatch(
      /-i leads names a file outside the input's data folders, which the daemon does not read: the run executes here/,
    );
    const runId = (JSON.parse(out.join('\n')) as { run: { id: string } }).run.id;
    const page = await finished(p, runId);
    expect(page.body.inputs.leads).toBe(INPUT_NOT_SHOWN);
    expect(page.text).not.toContain('SECRET-ROW');
  });
});
