/** Issue #8 observation 13 (smaller), the CLI parts: pipes, schema --check, busy ports, serve banner, log flags. */
import { createServer, type AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { captureIo } from './output.test-helpers.js';
import { exited, LOCAL_CONFIG, msgflowDaemon, project, ROOT } from './helpers.js';

const inDir = async <T>(dir: string, fn: () => Promise<T>): Promise<T> => {
  const before = process.cwd();
  process.chdir(dir);
  try {
    return await fn();
  } finally {
    process.chdir(before);
  }
};

describe('#8 obs 13: smaller CLI fixes', () => {
  it('obs 13: `msgflow schema | head` ends quietly: no EPIPE stack, exit 0', async () => {
    const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
    const child = spawn(process.execPath, ['--import', TSX, path.join(ROOT, 'src/cli/main.ts'), 'schema'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader goes away before the schema is written, as `head` does after its lines.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('obs 13: `schema --check` without --out is a usage error (exit 2)', async () => {
    const io = captureIo();
    expect(await runCli(['schema', '--check'], io)).toBe(2);
    expect(io.stderrText()).toContain('--check needs --out FILE');
  });

  it('obs 13: a busy port is one line naming the port and the setting, not a raw EADDRINUSE', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const dir = project({ 'config.yaml': LOCAL_CONFIG.replace('port: 0', `port: ${port}\n  host: 127.0.0.1`) });
      const io = captureIo();
      const code = await inDir(dir, () => runCli(['serve'], io));
      expect(code).toBe(1);
      const lines = io.stderrText().trim().split('\n');
      expect(lines).toEqual([`msgflow: port ${port} is already in use on 127.0.0.1: stop what listens there, or set local.port in config.yaml (or --port) to another port (0 picks a free one) [PORT_IN_USE]`]);
    } finally {
      blocker.close();
    }
  });

  it('obs 13: the serve banner shows the local instance ids (not the token) so a user can curl', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG });
    const d = await msgflowDaemon(['serve'], dir, /local instance 1101000001: curl (http:\/\/\S+)\/waInstance1101000001\/lastOutgoingMessages\/<apiTokenInstance from config\.yaml>/);
    try {
      const res = await fetch(`${d.match[1]}/waInstance1101000001/lastOutgoingMessages/cli-test-token-9f3a`);
      expect(res.status).toBe(200);
      expect(d.output()).not.toContain('cli-test-token-9f3a');
    } finally {
      d.child.kill('SIGTERM');
      await exited(d.child);
    }
  });

  it('obs 13: an unknown or ill-typed -i key is a usage error (exit 2) naming the input', async () => {
    const flow = 'name: hello\ninstance: default\ninputs:\n  limit: { type: number, default: 1 }\nsteps:\n  - { id: hi, uses: log, with: { message: hi } }\n';
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/hello.yaml': flow });
    const io = captureIo();
    expect(await inDir(dir, () => runCli(['run', 'hello', '-i', 'limt=3'], io))).toBe(2);
    expect(io.stderrText()).toMatch(/inputs\.limt: flow 'hello' has no input 'limt' \(did you mean 'limit'\?\).*\[INPUT_ARG_INVALID\]/);
    expect(io.stderrText()).toContain("Run 'msgflow run --help' for usage.");
    const io2 = captureIo();
    expect(await inDir(dir, () => runCli(['run', 'hello', '-i', 'limit=ten'], io2))).toBe(2);
    expect(io2.stderrText()).toContain("--input limit=ten: 'ten' is not a number");
  });

  it('obs 13: SIGHUP stops `msgflow serve` gracefully (exit 0), as SIGTERM does', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG });
    const d = await msgflowDaemon(['serve'], dir, /listening on (http:\/\/\S+)/);
    d.child.kill('SIGHUP');
    expect(await exited(d.child)).toBe(0);
    expect(d.output()).toContain('SIGHUP: closing the local service');
  });

  it('--log-level with a bad value is a usage error naming the choices', async () => {
    const io = captureIo();
    expect(await runCli(['validate', '--log-level', 'loud'], io)).toBe(2);
    expect(io.stderrText()).toContain('--log-level expects one of debug, info, warn, error, silent');
  });
});

describe('#8 obs 7: durations', () => {
  it('obs 7: a 33 s run that was interrupted reads "in 33s", not 00:00', async () => {
    const { formatRunSummary, runDurationMs } = await import('../../src/cli/run-format.js');
    const run = { id: 'r1', flow: 'imp', status: 'interrupted' as const, trigger: 'manual' as const, dryRun: false, startedAt: 1_000, updatedAt: 34_000, itemsDone: 3, itemsFailed: 0, resumes: 0 };
    expect(runDurationMs(run)).toBe(33_000);
    expect(formatRunSummary(run, [])).toContain('run r1 imp: interrupted in 33s');
  });
});
