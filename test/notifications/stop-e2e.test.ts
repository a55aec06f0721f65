/**
 * The STOP flow end to end over HTTP: `msgflow serve` runs the local service
 * (Alice's account answers the first message it gets with STOP), msgflow
 * talks to it as to a remote instance, the notification consumer of `msgflow
 * start` runs flows/opt-out.yaml on the STOP, and the next broadcast skips
 * Alice (optedOut) while Bob gets the file again.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { startNotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { serveCommand } from '../../src/runtime/serve.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOKEN = 'stop-e2e-token-4b2d';
const logger = { debug() {}, info() {}, warn() {}, error() {} };

const SERVE = `local:
  port: 0
  dataDir: served
  staticDir: public
  network:
    accounts:
      - { phone: 79001112233, name: Alice, replies: [{ text: STOP, afterMs: 300 }] }
      - { phone: 79002223344, name: Bob }
    deliveredAfterMs: 100
    readAfterMs: 200
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      # The test watches Alice's chat for the confirmation (getChatHistory allows one call a second by default).
      rateLimits: { getChatHistory: 0 }
`;

const BROADCAST = `name: brochure
inputs:
  tag: { type: string, default: first }
steps:
  - id: send
    uses: files.broadcast
    with:
      recipients: [79001112233, 79002223344, 79009999999]
      urlFile: "\${{ env.SERVE_URL }}/_local/static/brochure.pdf"
      fileName: brochure.pdf
      follow: { deadline: 2s, poll: 100ms, until: read }
      report: "reports/\${{ inputs.tag }}.csv"
env: [SERVE_URL]
`;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const rows = (dir: string, tag: string) =>
  parse(readFileSync(path.join(dir, `reports/${tag}.csv`), 'utf8'), { columns: true }) as Record<string, string>[];

describe('STOP end to end over HTTP (msgflow serve)', () => {
  it('a STOP reply to a broadcast opts the chat out, is confirmed once, and the next broadcast skips it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-stop-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(path.join(dir, 'flows'));
    mkdirSync(path.join(dir, 'public'));
    writeFileSync(path.join(dir, 'public/brochure.pdf'), '%PDF-1.4\n% a brochure\n');
    writeFileSync(path.join(dir, 'serve.yaml'), SERVE);
    const served = await serveCommand({ config: path.join(dir, 'serve.yaml'), print: () => {}, logger });
    cleanups.push(() => served.close());
    process.env.SERVE_URL = served.url;
    cleanups.push(async () => delete process.env.SERVE_URL);
    writeFileSync(
      path.join(dir, 'config.yaml'),
      `instances:\n  default:\n    apiUrl: ${served.url}\n    idInstance: "1101000001"\n    apiTokenInstance: ${TOKEN}\nstore: { driver: lowdb, dir: .msgflow/state }\n`,
    );
    copyFileSync(path.join(ROOT, 'flows/opt-out.yaml'), path.join(dir, 'flows/opt-out.yaml'));
    writeFileSync(path.join(dir, 'flows/brochure.yaml'), BROADCAST);

    // What `msgflow start` does: consume the instance's notifications (poll mode, over HTTP).
    const config = loadConfig(path.join(dir, 'config.yaml'));
    const runtime = await createRuntime({ config, command: 'start' });
    cleanups.push(() => runtime.close());
    const { flows, errors } = runtime.flows();
    expect(errors).toEqual([]);
    const consumers = await startNotificationConsumers({
      ...runtime,
      flows,
      identityFor: (n) => identityOf(config, n),
      logger,
      receiveTimeout: 5,
    });
    cleanups.push(() => consumers.stop());
    expect(consumers.instances).toEqual([{ name: 'default', mode: 'poll' }]);

    const first = await cli(['run', 'brochure', '--input', 'tag=first'], dir);
    expect(first.code).toBe(1); // a recipient failed: the run says so
    // Outcomes from the notifications: read, and the exact noAccount of a number without an account.
    expect(rows(dir, 'first').map((r) => [r.chatId, r.outcome, r.status || r.error])).toEqual([
      ['79001112233@c.us', 'sent', 'read'],
      ['79002223344@c.us', 'sent', 'read'],
      ['79009999999@c.us', 'failed', expect.stringMatching(/^noAccount/)],
    ]);

    // Alice's STOP arrives 300 ms after her message: one run of opt-out, which adds her and answers.
    const optOutRuns = await waitFor('the opt-out run to end', async () => {
      const runs = await runtime.engine.listRuns({ flow: 'opt-out' });
      return runs.length > 0 && !runs.some((r) => r.status === 'running' || r.status === 'waiting') ? runs : undefined;
    });
    expect(optOutRuns.map((r) => [r.status, r.trigger])).toEqual([['succeeded', 'notification']]);
    // The confirmation goes through the send queue: it shows in the chat once released (watched
    // through a client of the test's own, without the runtime's one getChatHistory a second).
    const watcher = createClient({ apiUrl: served.url, idInstance: '1101000001', apiTokenInstance: TOKEN, rateLimit: false, retries: 0 });
    cleanups.push(() => watcher.close());
    const confirmations = async () => {
      const history = await watcher.getChatHistory({ chatId: '79001112233@c.us', count: 10 });
      return history.filter((m) => m.type === 'outgoing' && /unsubscribed/.test(m.textMessage ?? '')).length;
    };
    expect(await waitFor('the confirmation in the chat', confirmations)).toBe(1);

    const second = await cli(['run', 'brochure', '--input', 'tag=second'], dir);
    expect(second.code).toBe(1); // the number without an account fails again
    expect(rows(dir, 'second').map((r) => [r.chatId, r.outcome])).toEqual([
      ['79002223344@c.us', 'sent'],
      ['79009999999@c.us', 'failed'],
      ['79001112233@c.us', 'optedOut'],
    ]);
    const run = (await runtime.engine.listRuns({ flow: 'brochure' }))[0]!;
    const [step] = await runtime.engine.getSteps(run.id);
    expect(step!.output).toMatchObject({ sent: 1, optedOut: 1, failed: 1 });
  }, 90_000);
});
