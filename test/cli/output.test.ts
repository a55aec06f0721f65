/** The CLI's smaller behaviours: pipes, schema --check, busy ports, serve banner, log flags. */
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { captureIo, cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';
import { ROOT, spawnCli } from '../support/spawn.js';

describe('command-line behaviours: pipes, schema --check, busy ports, serve banner, log flags', () => {
  it('`msgflow schema | head` ends quietly: no EPIPE stack, exit 0', async () => {
    const p = spawnCli(['schema'], ROOT);
    // The reader goes away before the schema is written, as `head` does after its lines.
    p.child.stdout!.destroy();
    expect(await p.exited).toBe(0);
    expect(p.stderr()).toBe('');
  });

  it('`schema --check` without --out is a usage error (exit 2)', async () => {
    const io = captureIo();
    expect(await runCli(['schema', '--check'], io)).toBe(2);
    expect(io.stderrText()).toContain('--check needs --out FILE');
  });

  it('a busy port is one line naming the port and the setting, not a raw EADDRINUSE', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const dir = project({ 'config.yaml': LOCAL_CONFIG.replace('port: 0', `port: ${port}\n  host: 127.0.0.1`) });
      const r = await cli(['serve'], dir);
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toEqual([
        `msgflow: port ${port} is already in use on 127.0.0.1: stop what listens there, or set local.port in config.yaml (or --port) to another port (0 picks a free one) [PORT_IN_USE]`,
      ]);
    } finally {
      blocker.close();
    }
  });

  it('an unknown or ill-typed -i key is a usage error (exit 2) naming the input', async () => {
    const flow =
      'name: hello\ninstance: default\ninputs:\n  limit: { type: number, default: 1 }\nsteps:\n  - { id: hi, uses: log, with: { message: hi } }\n';
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/hello.yaml': flow });
    const typo = await cli(['run', 'hello', '-i', 'limt=3'], dir);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/inputs\.limt: flow 'hello' has no input 'limt' \(did you mean 'limit'\?\).*\[INPUT_ARG_INVALID\]/);
    expect(typo.stderr).toContain("Run 'msgflow run --help' for usage.");
    const notNumber = await cli(['run', 'hello', '-i', 'limit=ten'], dir);
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain("--input limit=ten: 'ten' is not a number");
  });

  it('SIGHUP stops `msgflow serve` gracefully (exit 0), as SIGTERM does', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG });
    const d = spawnCli(['serve'], dir);
    await d.waitForOutput(/listening on (http:\/\/\S+)/);
    d.child.kill('SIGHUP');
    expect(await d.exited).toBe(0);
    expect(d.output()).toContain('SIGHUP: closing the local service');
  });

  it('--log-level with a bad value is a usage error naming the choices', async () => {
    const io = captureIo();
    expect(await runCli(['validate', '--log-level', 'loud'], io)).toBe(2);
    expect(io.stderrText()).toContain('--log-level expects one of debug, info, warn, error, silent');
  });
});

describe('durations on the command line', () => {
  it('a 33 s run that was interrupted reads "in 33s", not 00:00', async () => {
    const { formatRunSummary, runDurationMs } = await import('../../src/cli/run-format.js');
    const run = {
      id: 'r1',
      flow: 'imp',
      status: 'interrupted' as const,
      trigger: 'manual' as const,
      dryRun: false,
      startedAt: 1_000,
      updatedAt: 34_000,
      itemsDone: 3,
      itemsFailed: 0,
      resumes: 0,
    };
    expect(runDurationMs(run)).toBe(33_000);
    expect(formatRunSummary(run, [])).toContain('run r1 imp: interrupted in 33s');
  });
});
