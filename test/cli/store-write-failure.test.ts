/**
 * A store that stops taking writes in the middle of `msgflow run`: the
 * process exits with an error naming the file and what to fix, and the run
 * is left resumable; once the store takes writes again, `msgflow run`
 * continues it and sends nothing twice. Spawned: that the process exits is
 * the subject (the in-process local service listens, so a run that never
 * closes it never ends).
 *
 * How the write is made to fail: the run's document log
 * (`runs/<id>/run.jsonl`) is moved aside and a directory put in its place,
 * so the next write fails with EISDIR; the log is put back for the resume.
 * Unlike a read-only directory (chmod), that stops root too, and the suite
 * runs as root.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project } from '../support/project.js';
import { spawnCli } from '../support/spawn.js';
import { serveCommand } from '../../src/runtime/serve.js';
import { waitFor } from '../support/wait.js';

const ZOD = import.meta.resolve('zod');
const TOKEN = 'store-write-token-7c1e';
const ID = '1101000077';

// Waits until a file of the project exists: the test decides when the run goes on.
const PLUGIN = `import { existsSync } from 'node:fs';
import { z } from '${ZOD}';
export const actions = [{
  name: 'gate.wait',
  description: 'waits until a file exists',
  input: z.object({ file: z.string() }),
  output: { description: 'true' },
  async run(ctx, input) {
    while (!existsSync(ctx.resolvePath(input.file))) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  },
}];
`;

const CONFIG = `instances:
  default:
    apiUrl: local
local:
  port: 0
  dataDir: .msgflow/local
  instances:
    - idInstance: "${ID}"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 3600000
plugins: [./gate.js]
`;

const CHATS = ['79001110001', '79001110002', '79001110003'];

const FLOW = `name: notes
instance: default
inputs:
  chats: { default: ${JSON.stringify(CHATS)} }
steps:
  - id: first
    uses: sendMessage
    forEach: \${{ inputs.chats }}
    with: { chatId: "\${{ item }}@c.us", message: first }
  - id: gate
    uses: gate.wait
    with: { file: go }
  - id: second
    uses: sendMessage
    forEach: \${{ inputs.chats }}
    with: { chatId: "\${{ item }}@c.us", message: second }
`;

/** Every message that reached the local service (lastOutgoingMessages lists the queued ones too). */
async function reached(dir: string): Promise<string[]> {
  const serve = await serveCommand({ config: 'config.yaml', cwd: dir, port: 0, print: () => {} });
  try {
    const sent = (await (await fetch(`${serve.url}/waInstance${ID}/lastOutgoingMessages/${TOKEN}?minutes=60`)).json()) as {
      chatId: string;
      textMessage?: string;
    }[];
    return sent.map((m) => `${m.chatId} ${m.textMessage}`).sort();
  } finally {
    await serve.close();
  }
}

describe('a store that stops taking writes during msgflow run', () => {
  it('the process exits naming the file and the fix, and a later msgflow run resumes the run without sending twice', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'gate.js': PLUGIN, 'flows/notes.yaml': FLOW });
    const runs = join(dir, '.msgflow/state/runs');
    const proc = spawnCli(['run', 'notes'], dir);
    try {
      await proc.waitForOutput(/notes\/gate started/);
      const runId = await waitFor('the run directory', async () => (existsSync(runs) ? await readdir(runs) : [])[0]);
      const blocker = join(runs, runId, 'run.jsonl');
      await rename(blocker, `${blocker}.aside`);
      await mkdir(blocker);
      await writeFile(join(dir, 'go'), '');
      // Bounded only so that a hang fails clearly.
      const code = await Promise.race([proc.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
      const err = proc.stderr();
      expect(code, proc.output()).toBe(1);
      expect(err).toContain(`${blocker}`);
      expect(err).toMatch(/\[STORE_UNAVAILABLE\]/);
      expect(err).toMatch(/remove it/);
      expect(err).toContain(`msgflow run notes`);

      await rm(blocker, { recursive: true });
      await rename(`${blocker}.aside`, blocker);
      const again = await cli(['run', 'notes'], dir);
      expect(again.stderr).toContain(`resuming run ${runId}`);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(await reached(dir)).toEqual([...CHATS.map((c) => `${c}@c.us first`), ...CHATS.map((c) => `${c}@c.us second`)].sort());
    } finally {
      await proc.kill();
    }
  }, 180_000);
});
