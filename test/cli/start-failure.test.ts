/**
 * A `msgflow start` that fails after claiming the store (here: a plugin that
 * throws while loading) gives its claim back, so fixing the problem and
 * starting again works instead of answering DAEMON_RUNNING for a daemon that
 * never ran.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deleteKeys } from '../support/redis.js';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';
import { redisUrl } from '../support/redis.js';
import { spawnCli } from '../support/spawn.js';

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

  // Spawned: whether the refused process ends is the subject.
  it('with the BullMQ executor and a Redis store, a second start on the same local service data exits naming the holder instead of staying up', async () => {
    const prefix = `h26trials-${randomBytes(4).toString('hex')}`;
    const dir = project({
      'config.yaml': `${LOCAL_CONFIG}store: { driver: redis, url: "${redisUrl}", prefix: "${prefix}:" }
executor: { driver: bullmq, prefix: ${prefix}-bull }
`,
      'flows/.keep': '',
    });
    const first = spawnCli(['start', '--no-ui'], dir);
    try {
      await first.waitForOutput(/started; /);
      const second = spawnCli(['start', '--no-ui'], dir);
      try {
        expect(await second.exited).not.toBe(0);
        expect(second.stderr()).toMatch(new RegExp(`in use by process ${first.child.pid} \\(msgflow start\\).*\\[LOCAL_DATA_IN_USE\\]`));
      } finally {
        await second.kill();
      }
    } finally {
      await first.kill();
      await deleteKeys(prefix);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
