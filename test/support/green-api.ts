/**
 * The official JS client v2 (@green-api/whatsapp-api-client-js-v2) pointed
 * at `msgflow serve`, as its users would: one instance of a served
 * config.yaml, and the only change to the package is its base URL (it
 * hard-codes its cloud URL; a user points its axios instance elsewhere).
 * The package logs every request, instance id included: its console output
 * is kept out of the test output until `close()`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { vi } from 'vitest';
import { serveCommand, type ServeHandle } from '../../src/runtime/serve.js';
import { A } from './local-service.js';

export interface OfficialClientOptions {
  /** Names the temporary project folder (`msgflow-greenapi-<name>-`). */
  name: string;
  /** YAML lines under `local:`, after `dataDir` (the network, `fetch:`), indented for it. @default [] */
  local?: string[];
  /** YAML lines of the instance, after its id and token (rate limits, settings, seed), indented for it. @default [] */
  instance?: string[];
  /** Files written into the project folder before serving, by name (a seed.yaml). @default {} */
  files?: Record<string, string>;
  /** Receives each line serve prints. @default discarded */
  print?: (line: string) => void;
}

export interface OfficialClient {
  client: GreenApiClient;
  served: ServeHandle;
  /** The project folder. */
  dir: string;
  /** Stops serving, removes the folder, gives the console back. */
  close(): Promise<void>;
}

export async function serveForOfficialClient(o: OfficialClientOptions): Promise<OfficialClient> {
  for (const m of ['log', 'info', 'debug', 'warn', 'error'] as const) vi.spyOn(console, m).mockImplementation(() => {});
  const dir = await mkdtemp(path.join(tmpdir(), `msgflow-greenapi-${o.name}-`));
  for (const [name, text] of Object.entries(o.files ?? {})) await writeFile(path.join(dir, name), text);
  await writeFile(
    path.join(dir, 'config.yaml'),
    [
      'local:',
      '  dataDir: data',
      ...(o.local ?? []),
      '  instances:',
      `    - idInstance: "${A.idInstance}"`,
      `      apiTokenInstance: "${A.apiTokenInstance}"`,
      ...(o.instance ?? []),
      '',
    ].join('\n'),
  );
  const served = await serveCommand({ config: path.join(dir, 'config.yaml'), port: 0, print: o.print ?? (() => {}) });
  const client = new GreenApiClient({ idInstance: Number(A.idInstance), apiTokenInstance: A.apiTokenInstance });
  (client as unknown as { client: { defaults: { baseURL: string } } }).client.defaults.baseURL = `${served.url}/waInstance${A.idInstance}`;
  return {
    client,
    served,
    dir,
    close: async () => {
      // Test files share a worker (vitest.config.ts isolate: false): the next file's console works again.
      vi.restoreAllMocks();
      await served.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
