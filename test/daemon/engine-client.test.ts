/**
 * Both EngineClients through one behavioural suite, each over a daemon
 * started with createDaemon: the in-process client runs in the daemon's
 * engine, the HTTP client talks to the daemon's dashboard API.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { pauseKey } from '../../src/engine/run/pauses.js';
import { sharedState } from '../../src/engine/shared.js';
import { identityOf } from '../../src/config/identity.js';
import { createDaemon, type Daemon } from '../../src/runtime/daemon.js';
import { createHttpEngineClient } from '../../src/runtime/engine-client/http.js';
import type { EngineClient } from '../../src/runtime/engine-client/types.js';
import { writeProject } from '../ui/helpers.js';
import { CLIENT_FLOWS, describeEngineClientConformance, type EngineClientHarness } from './engine-client-conformance.js';

const TOKEN = 'engine-client-ui-token-5150';

/** A daemon over its own project (the dashboard on a free port, with a token), and a client of it. */
async function harness(clientOf: (daemon: Daemon) => EngineClient): Promise<EngineClientHarness> {
  const dir = writeProject(`ui:\n  port: 0\n  token: ${TOKEN}\n`, { flows: CLIENT_FLOWS });
  const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), listen: false });
  await daemon.start();
  const client = clientOf(daemon);
  return {
    client,
    async addPause(p) {
      const { config, store } = daemon.runtime;
      const identity = identityOf(config, 'default');
      const at = Date.now();
      const record = { instance: 'default', identity, scope: 'checkAccount', since: at, retryAfterMs: 0, ...p };
      await sharedState(store, 'pauses').set(pauseKey(identity, 'checkAccount'), record);
    },
    async close() {
      await client.close();
      await daemon.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeEngineClientConformance('in-process', () => harness((daemon) => daemon.client));

describeEngineClientConformance('HTTP, over the daemon’s dashboard API', () =>
  harness((daemon) => createHttpEngineClient({ url: daemon.status().dashboard!, token: TOKEN })),
);
