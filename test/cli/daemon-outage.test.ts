/**
 * The daemon through a Redis outage: the run the outage interrupted resumes
 * from its checkpoint by itself once Redis answers again (no restart), every
 * recipient gets the file once, and /healthz answers 503 meanwhile. The
 * daemon is spawned (the process is the subject) with its store reached
 * through a TCP proxy to Redis that the test cuts and restores. The outage
 * lasts until the run's claim has lapsed in Redis (the daemon's lease TTL is
 * 1.5 s here, 30 s by default), as in a long outage.
 *
 * MSGFLOW_TRIALS=20 (npm run trials) repeats it for the figures in
 * docs/configuration.md.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/store/redis-store.js';
import { E2E_ID, E2E_TOKEN, serveYaml, startServe } from '../jobs/helpers/cli.js';
import { deleteKeys } from '../support/redis.js';
import type { FileServer } from '../support/file-server.js';
import { startPdfServer } from '../support/local-service.js';
import { project, writeData } from '../support/project.js';
import { RedisProxy, redisReachable, redisUrl } from '../support/redis.js';
import { spawnCli } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 1);
const RECIPIENTS = 12;
const up = await redisReachable();

let serve: Awaited<ReturnType<typeof startServe>> | undefined;
let files: FileServer | undefined;
beforeAll(async () => {
  if (!up) return;
  files = await startPdfServer();
  const dir = project({}, 'msgflow-outage-serve-');
  await writeData(dir, 'serve.yaml', serveYaml([{ id: E2E_ID, sendIntervalMs: 500 }]));
  serve = await startServe(dir);
});
afterAll(async () => {
  await serve?.close();
  await files?.close();
});

/** Messages per chat that reached the service (lastOutgoingMessages lists queued ones too). */
async function reached(): Promise<Map<string, number>> {
  const res = await fetch(`${serve!.url}/waInstance${E2E_ID}/lastOutgoingMessages/${E2E_TOKEN}?minutes=1440`);
  const per = new Map<string, number>();
  for (const m of (await res.json()) as { chatId: string }[]) per.set(m.chatId, (per.get(m.chatId) ?? 0) + 1);
  return per;
}

interface OutageTrial {
  lost: string[];
  doubled: string[];
  healthz: { status: number; body: { store: { ok: boolean; error?: string } } };
  status: string | undefined;
}

async function outageTrial(trial: number): Promise<OutageTrial> {
  const prefix = `msgflow-test-outage-${randomBytes(4).toString('hex')}:`;
  const proxy = new RedisProxy();
  await proxy.start();
  const chats = Array.from({ length: RECIPIENTS }, (_, i) => `7932${String(trial).padStart(3, '0')}${String(i).padStart(4, '0')}@c.us`);
  const dir = project(
    {
      'config.yaml': `instances:
  default:
    apiUrl: ${serve!.url}
    idInstance: "${E2E_ID}"
    apiTokenInstance: "${E2E_TOKEN}"
    rateLimit: false
flowsDir: flows
store: { driver: redis, url: "${proxy.url}", prefix: "${prefix}" }
ui: { port: 0 }
`,
      'flows/broadcast.yaml': `name: broadcast
instance: default
on: { startup: true }
inputs:
  chats: { default: ${JSON.stringify(chats)} }
steps:
  - id: send
    uses: files.broadcast
    with:
      recipients: \${{ inputs.chats }}
      urlFile: ${files!.url('/brochure.pdf')}
      fileName: brochure.pdf
      pace: { delay: 100ms }
      follow: { deadline: 0 }
      reconcile: { sendInterval: 500ms, grace: 1s }
`,
    },
    'msgflow-outage-',
  );
  const daemon = spawnCli(['start', '--log-level', 'info'], dir, { MSGFLOW_LEASE_TTL_MS: '1500' });
  const direct = new Redis(redisUrl);
  try {
    const ui = (await daemon.waitForOutput(/dashboard on (http:\/\/\S+)/))[1]!;
    const runId = (await daemon.waitForOutput(/broadcast \(run (\S+)\) started/))[1]!;
    const sentSoFar = async () => [...(await reached()).keys()].filter((c) => chats.includes(c)).length;
    await waitFor('a few files sent', async () => (await sentSoFar()) >= 4, { timeoutMs: 90_000, context: daemon.output });

    await proxy.kill();
    await daemon.waitForOutput(/interrupted: the redis store is unavailable/);
    const h = await fetch(`${ui}/healthz`);
    const healthz = { status: h.status, body: (await h.json()) as OutageTrial['healthz']['body'] };
    // A long outage: the run's claim lapses in Redis before it is back.
    await waitFor('the run claim to lapse', async () => (await direct.exists(`${prefix}lease:run:${runId}`)) === 0, {
      timeoutMs: 90_000,
    });
    await proxy.start();

    await daemon.waitForOutput(new RegExp(`run ${runId} of broadcast resumes from its checkpoint: the store answers again`));
    await daemon.waitForOutput(new RegExp(`broadcast \\(run ${runId}\\) (finished|failed)`), 90_000);
    const store = createRedisStore({ url: redisUrl, prefix });
    const status = (await store.getRun(runId))?.status;
    await store.close();
    const per = await reached();
    return {
      lost: chats.filter((c) => !per.has(c)),
      doubled: chats.filter((c) => (per.get(c) ?? 0) > 1),
      healthz,
      status,
    };
  } finally {
    daemon.child.kill('SIGTERM');
    await Promise.race([daemon.exited, new Promise((r) => setTimeout(r, 10_000))]);
    await daemon.kill();
    direct.disconnect();
    await proxy.kill();
    await deleteKeys(prefix.slice(0, -1));
  }
}

describe.skipIf(!up)('msgflow start through a Redis outage', () => {
  it(
    `the run an outage interrupted resumes by itself once Redis answers, each recipient sent once; /healthz answers 503 meanwhile (${TRIALS} trial(s))`,
    async () => {
      const trials: OutageTrial[] = [];
      for (let i = 0; i < TRIALS; i++) trials.push(await outageTrial(i));
      if (TRIALS > 1) {
        console.info(
          `outage trials: ${TRIALS}, resumed and succeeded ${trials.filter((t) => t.status === 'succeeded').length}, ` +
            `lost ${trials.flatMap((t) => t.lost).length}, doubled ${trials.flatMap((t) => t.doubled).length}`,
        );
      }
      for (const t of trials) {
        expect(t.healthz).toEqual({
          status: 503,
          body: expect.objectContaining({
            store: { ok: false, driver: 'redis', error: 'the redis store is unavailable: not connected (reconnecting)' },
          }),
        });
        expect(t.status).toBe('succeeded');
      }
      expect(trials.flatMap((t) => t.lost)).toEqual([]);
      expect(trials.flatMap((t) => t.doubled)).toEqual([]);
    },
    120_000 * TRIALS,
  );
});
