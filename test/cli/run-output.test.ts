/** What `msgflow run` prints: `log` steps show at info, --log-level and config logLevel honoured, --json-logs. */
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const FLOW = 'name: hello\ninstance: default\nsteps:\n  - { id: hi, uses: log, with: { message: "hello from a log step" } }\n';

describe('msgflow run output', () => {
  it('a log step shows at the default level; --log-level warn and config logLevel: warn hide it; --json-logs gives JSON lines', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/hello.yaml': FLOW });
    const plain = await cli(['run', 'hello'], dir);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/INFO {2}hello from a log step/);
    const quiet = await cli(['run', 'hello', '--log-level', 'warn'], dir);
    expect(quiet.stderr).not.toContain('hello from a log step');
    const cfg = project({ 'config.yaml': `${LOCAL_CONFIG}logLevel: warn\n`, 'flows/hello.yaml': FLOW });
    expect((await cli(['run', 'hello'], cfg)).stderr).not.toContain('hello from a log step');
    const json = await cli(['run', 'hello', '--json-logs'], dir);
    const lines = json.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; event?: string });
    expect(lines.some((l) => l.msg === 'hello from a log step' && l.event === 'log')).toBe(true);
  });
});
