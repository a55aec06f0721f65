/**
 * A `msgflow start` that fails after claiming the store (here: a plugin that
 * throws while loading) gives its claim back, so fixing the problem and
 * starting again works instead of answering DAEMON_RUNNING for a daemon that
 * never ran.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

describe('msgflow start failing at start-up', () => {
  it('releases the one-daemon claim', async () => {
    const dir = project({
      'config.yaml': `${LOCAL_CONFIG}plugins: [./broken.js]\n`,
      'broken.js': `throw new Error('broken plugin at load');\n`,
      'flows/.keep': '',
    });
    try {
      const first = await cli(['start', '--no-ui'], dir);
      expect(first.code).not.toBe(0);
      expect(first.stderr).toMatch(/broken plugin at load/);
      const second = await cli(['start', '--no-ui'], dir);
      expect(second.stderr).not.toMatch(/DAEMON_RUNNING|already running/i);
      expect(second.stderr).toMatch(/broken plugin at load/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
