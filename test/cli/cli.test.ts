/**
 * The commands through runCli in this process (cwd = the project folder);
 * `msgflow serve` is spawned once: a long-lived process that a signal stops
 * and that other processes (this one) use over HTTP.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';
import { ROOT, spawnCli } from '../support/spawn.js';

const CHECK_FLOW = `name: check-two
instance: default
inputs:
  phones: { value: [79001112233, 79005550000] }
steps:
  - id: check
    uses: checkAccount
    forEach: \${{ inputs.phones }}
    with: { phoneNumber: "\${{ item }}" }
  - id: done
    uses: log
    with: { message: "\${{ steps.check.done }} checked" }
`;

describe('msgflow CLI', () => {
  it('--help, --version and usage errors have the documented exit codes', async () => {
    const help = await cli(['--help'], ROOT);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: msgflow <command>/);
    for (const cmd of ['start', 'run', 'runs', 'validate', 'serve']) expect(help.stdout).toContain(cmd);
    const version = await cli(['--version'], ROOT);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const none = await cli([], ROOT);
    expect(none.code).toBe(2);
    const bad = await cli(['frobnicate'], ROOT);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown command 'frobnicate'");
    const badOpt = await cli(['runs', '--bogus'], ROOT);
    expect(badOpt.code).toBe(2);
    expect(badOpt.stderr).toMatch(/--bogus/);
    const runHelp = await cli(['run', '--help'], ROOT);
    expect(runHelp.code).toBe(0);
    expect(runHelp.stdout).toMatch(/--dry-run/);
  });

  it('validate names file:line:col and key path, and exits 1', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/bad.yaml': 'name: bad\ninstance: default\nsteps:\n  - id: a\n    uses: checkAcount\n    with: { phoneNumber: 1 }\n',
      'flows/good.yaml': CHECK_FLOW,
    });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/flows\/bad\.yaml:5:11 steps\[0\]\.uses: unknown action 'checkAcount'.*did you mean 'checkAccount'/);
    expect(r.stdout).toMatch(/ok {2}\S*flows\/good\.yaml/);
    const one = await cli(['validate', 'flows/good.yaml'], dir);
    expect(one.code).toBe(0);
  });

  it('validate reports a bad config.yaml with its position', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG.replace('sendIntervalMs: 500', 'sendIntervalMs: 100') });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('config.yaml:14:23 local.instances[0].sendIntervalMs: expected at least 500 ms');
  });

  it('run executes a flow on the local service, and runs lists it', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/check.yaml': CHECK_FLOW });
    const r = await cli(['run', 'check-two'], dir);
    expect(r.stderr + r.stdout).not.toContain('cli-test-token-9f3a');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/check-two: succeeded/);
    expect(r.stdout).toMatch(/check \(checkAccount\): succeeded \(2 items\): 2 done$/m);
    const list = await cli(['runs', '--flow', 'check-two'], dir);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/check-two\s+succeeded/);
    const json = await cli(['runs', '--json'], dir);
    expect(JSON.parse(json.stdout)[0]).toMatchObject({ flow: 'check-two', status: 'succeeded', itemsDone: 3 });
  });

  it('run --dry-run calls nothing; an unknown flow is a clear error', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/check.yaml': CHECK_FLOW });
    const dry = await cli(['run', 'check-two', '--dry-run', '--json'], dir);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).run).toMatchObject({ dryRun: true, status: 'succeeded' });
    const missing = await cli(['run', 'chek-two'], dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/chek-two.*not found/);
    const usage = await cli(['run'], dir);
    expect(usage.code).toBe(2);
    const badInput = await cli(['run', 'check-two', '--input', 'novalue'], dir);
    expect(badInput.code).toBe(2);
  });

  it('nothing listening at a remote apiUrl fails the run at once, naming the instance and apiUrl, never its token or id', async () => {
    const config = `instances:\n  default:\n    apiUrl: http://127.0.0.1:9\n    idInstance: "7777123456"\n    apiTokenInstance: sekret-token-abcdef\n`;
    const dir = project({ 'config.yaml': config, 'flows/check.yaml': CHECK_FLOW });
    const r = await cli(['run', 'check-two', '--json'], dir);
    expect(r.code).toBe(1);
    const all = r.stdout + r.stderr;
    expect(all).toContain("instance 'default': nothing is listening at apiUrl http://127.0.0.1:9 (checkAccount: connection refused)");
    expect(all).not.toContain('sekret-token-abcdef');
    expect(all).not.toContain('7777123456');
  });

  it('serve prints its URL and a curl line per local instance with <API_TOKEN> and where that token is in config.yaml (never the token), answers the API, is used by another process over HTTP, refuses a second serve, and stops on SIGTERM', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/check.yaml': CHECK_FLOW });
    const serve = spawnCli(['serve'], dir);
    try {
      const [, url] = await serve.waitForOutput(
        /local instance 1101000001: curl (http:\/\/127\.0\.0\.1:\d+)\/waInstance1101000001\/lastOutgoingMessages\/<API_TOKEN>\n {4}with <API_TOKEN> = local\.instances\[0\]\.apiTokenInstance of config\.yaml \(tokens are never printed\)\n/,
      );
      expect(serve.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
      expect((await fetch(`${url}/waInstance1101000001/lastOutgoingMessages/cli-test-token-9f3a`)).status).toBe(200);
      // This process is not the service's owner: its run goes over HTTP to the serving one.
      const r = await cli(['run', 'check-two'], dir);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/check \(checkAccount\): succeeded \(2 items\): 2 done/);
      // The checks reached the serving process: its cache now answers fromCache.
      const res = await fetch(`${url}/waInstance1101000001/checkAccount/cli-test-token-9f3a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ phoneNumber: 79001112233 }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ exist: true, chatId: '79001112233@c.us', fromCache: true });
      const again = await cli(['serve'], dir);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(new RegExp(`in use by process ${serve.child.pid} \\(msgflow serve\\)`));
      expect(serve.output()).not.toContain('cli-test-token-9f3a');
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    } finally {
      await serve.kill();
    }
  });

  it('schema prints the flow JSON Schema with every action, plugins included', async () => {
    const r = await cli(['schema'], ROOT);
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout) as object;
    const text = JSON.stringify(schema);
    for (const action of [
      'checkAccount.bulk',
      'contacts.import',
      'outgoing.audit',
      'files.broadcast',
      'greeting.compose',
      'sendFileByUrl',
    ]) {
      expect(text).toContain(action);
    }
  });
});
