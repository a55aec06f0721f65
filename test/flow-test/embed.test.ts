import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('examples/embed', () => {
  it('imports only from the package root', () => {
    for (const f of ['embed.js', 'plugins/shout.js']) {
      const specifiers = [...readFileSync(path.join(ROOT, 'examples/embed', f), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]);
      expect(new Set(specifiers.filter((s) => !s!.startsWith('node:')))).toEqual(new Set(['msgflow']));
    }
  });

  it('runs from a project that depends on msgflow: local service + client, a flow run with a plugin, the daemon, flow tests', async () => {
    // The example as a user's project: msgflow in node_modules (as `npm install` of a checkout links it).
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-embed-'));
    dirs.push(dir);
    cpSync(path.join(ROOT, 'examples/embed'), dir, { recursive: true, filter: (src) => !src.includes('.msgflow') });
    mkdirSync(path.join(dir, 'node_modules'));
    symlinkSync(ROOT, path.join(dir, 'node_modules/msgflow'), 'dir');
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'embed-demo', private: true, type: 'module', dependencies: { msgflow: `file:${ROOT}` } }),
    );
    const { stdout } = await promisify(execFile)(process.execPath, ['embed.js'], { cwd: dir });
    expect(stdout).toContain('checkAccount 79001112233: exist=true');
    expect(stdout).toContain('run succeeded: ACCOUNT EXISTS: TRUE');
    expect(stdout).toContain('daemon (1 flow loaded): run succeeded');
    expect(stdout).toContain('flow tests: 1 passed, 0 failed');
  });
});
