/**
 * Each runtime, and each `msgflow` invocation, hides the tokens and instance
 * ids it was given — and only those: two runtimes embedded in one process do
 * not share a list of secrets that grows with every config ever loaded.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const TOKEN_A = 'token-of-project-a-41c7';
const TOKEN_B = 'token-of-project-b-9e02';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function projectWith(token: string, files: Record<string, string> = {}): string {
  const dir = project({ 'config.yaml': remoteConfig(token, 'store:\n  driver: memory\n'), ...files }, 'msgflow-secrets-');
  dirs.push(dir);
  return dir;
}

describe('secrets are hidden by the runtime that was given them', () => {
  it('two runtimes in one process each hide their own token, and neither hides (nor holds) the other', async () => {
    const a = await createRuntime({ config: loadConfig(path.join(projectWith(TOKEN_A), 'config.yaml')), command: 'test' });
    const b = await createRuntime({ config: loadConfig(path.join(projectWith(TOKEN_B), 'config.yaml')), command: 'test' });
    try {
      const text = `a=${TOKEN_A} b=${TOKEN_B}`;
      expect(a.redactor.scrub(text)).toBe(`a=<API_TOKEN> b=${TOKEN_B}`);
      expect(b.redactor.scrub(text)).toBe(`a=${TOKEN_A} b=<API_TOKEN>`);
      // What one adds later (a dashboard or webhook token) stays its own.
      a.redactor.add({ apiTokenInstance: 'dashboard-token-of-a-77' });
      expect(b.redactor.scrub('dashboard-token-of-a-77')).toBe('dashboard-token-of-a-77');
      expect(a.redactor.scrub('dashboard-token-of-a-77')).toBe('<API_TOKEN>');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("what a command prints hides its own config's token, not one an earlier command in the process loaded", async () => {
    const flow = {
      'flows/say.yaml': `name: say\nsteps:\n  - id: say\n    uses: log\n    with: { message: "a=${TOKEN_A} b=${TOKEN_B}" }\n`,
    };
    const first = await cli(['run', 'say'], projectWith(TOKEN_A, flow));
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`a=<API_TOKEN> b=${TOKEN_B}`);
    const second = await cli(['run', 'say'], projectWith(TOKEN_B, flow));
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(`a=${TOKEN_A} b=<API_TOKEN>`);
  });
});
