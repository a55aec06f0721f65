/**
 * A kill -9 of `msgflow start` between receiving a notification and deleting
 * it: the triggered run starts once. Spawned: the killed process is the
 * subject. The flow's own first step kills the daemon after the dispatcher
 * recorded the run and before deleteNotification: deleteNotification is
 * limited to 1/s and a first (non-matching) notification has just used that
 * second's slot, so the STOP's delete waits while the run starts. The
 * service still holds the notification and delivers it again to the next
 * daemon, which must recognise it and only resume the run.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project } from '../support/project.js';
import { spawnCli } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

const ZOD = import.meta.resolve('zod');
const TOKEN = 'kill-test-token-7c1e';

const CONFIG = `instances:
  default:
    apiUrl: local
local:
  port: 0
  dataDir: .msgflow/local
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      rateLimits: { deleteNotification: 1 }
plugins: [./crash.js]
`;

// First call: note the run and die like kill -9 (no handler runs). Later calls: note and succeed.
const PLUGIN = `import { appendFileSync, existsSync } from 'node:fs';
import { z } from '${ZOD}';
export const actions = [{
  name: 'test.crashOnce',
  description: 'kills its process the first time',
  input: z.object({ chatId: z.string() }),
  output: { description: 'nothing' },
  async run(ctx, input) {
    const first = !existsSync('marks.txt');
    appendFileSync('marks.txt', ctx.run.id + ' ' + input.chatId + '\\n');
    if (first) {
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => {});
    }
    return { ok: true };
  },
}];
`;

const FLOW = `name: on-stop
on:
  notification: { text: "^stop$" }
steps:
  - id: mark
    uses: test.crashOnce
    with: { chatId: "\${{ event.senderData.chatId }}" }
`;

const marks = (dir: string) => (existsSync(join(dir, 'marks.txt')) ? readFileSync(join(dir, 'marks.txt'), 'utf8').trim().split('\n') : []);

describe('kill -9 of msgflow start between receive and delete', () => {
  it('starts the triggered run once: the redelivered notification only resumes it', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'crash.js': PLUGIN, 'flows/on-stop.yaml': FLOW });
    // The in-process `msgflow runs` at the end loads while the daemons start, not after them.
    const runsLoaded = import('../../src/cli/commands/runs.js');
    try {
      const first = spawnCli(['start', '--no-ui'], dir);
      await first.waitForOutput(/started; /);
      const url = /local service listening on (\S+)/.exec(first.output())![1]!;
      const say = (textMessage: string) =>
        fetch(`${url}/_local/waInstance1101000001/incoming/${TOKEN}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ chatId: '79001112233@c.us', typeMessage: 'textMessage', textMessage }),
        });
      expect((await say('hello')).status).toBe(200);
      expect((await say('STOP')).status).toBe(200);
      expect(await first.exited).toBeNull(); // killed by its own SIGKILL
      expect(first.child.signalCode).toBe('SIGKILL');
      expect(marks(dir)).toHaveLength(1);
      const [runId] = marks(dir)[0]!.split(' ');

      const second = spawnCli(['start', '--no-ui', '--log-level', 'debug'], dir);
      await second.waitForOutput(/started; /);
      await waitFor('the resumed run to mark again', () => marks(dir).length >= 2, 90_000);
      // The notification came again (it was never deleted) and started nothing new.
      await second.waitForOutput(/notification incomingMessageReceived from instance default/);
      second.child.kill('SIGTERM');
      await second.exited;
      expect(second.output()).toMatch(/notification incomingMessageReceived from instance default \(lag [^)]*, 0 runs started\)/);
      expect(marks(dir)).toEqual([`${runId} 79001112233@c.us`, `${runId} 79001112233@c.us`]);
      await runsLoaded;
      const runs = await cli(['runs', '--json'], dir);
      const list = JSON.parse(runs.stdout) as Array<{ id: string; flow: string; status: string; trigger: string }>;
      expect(list.filter((r) => r.flow === 'on-stop').map((r) => [r.id, r.status])).toEqual([[runId, 'succeeded']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
