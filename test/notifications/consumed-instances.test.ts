/** Which instances `msgflow start` consumes the notifications of, by default and as config.yaml says. */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { loadFlows } from '../../src/engine/flow/load.js';
import { flowSource } from '../../src/runtime/project-engine.js';
import { buildRegistry } from '../../src/runtime/registry.js';
import { consumedInstances } from '../../src/runtime/notifications/consumers.js';
import { project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const INSTANCES = (quiet: string) => `instances:
  default: { apiUrl: local }
  quiet: { apiUrl: local${quiet} }
  other: { apiUrl: local }
local:
  instances: [{ idInstance: "1101000001", apiTokenInstance: consumed-test-token-1a2b }]
`;

const ASK = `name: ask
instance: quiet
steps:
  - id: answer
    uses: waitForReply
    with: { chatId: 79001112233, timeout: 1m }
`;
const STOP = `name: stop
on: { notification: { text: "^stop$" } }
steps:
  - id: say
    uses: log
    with: { message: stop }
`;

async function consumed(quiet = '') {
  const dir = project({ 'config.yaml': INSTANCES(quiet), 'flows/ask.yaml': ASK, 'flows/stop.yaml': STOP }, 'msgflow-consumed-');
  dirs.push(dir);
  const config = loadConfig(path.join(dir, 'config.yaml'));
  const source = flowSource(config, await buildRegistry(config));
  const { flows, errors } = loadFlows(source.dir, source.options);
  expect(errors).toEqual([]);
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
  return { instances: consumedInstances(config, flows, logger), warnings };
}

describe('the instances msgflow start consumes', () => {
  it('those a flow is triggered by, and those a flow waits for replies on (waitForReply), in poll mode; no other', async () => {
    expect((await consumed()).instances).toEqual([
      { name: 'default', mode: 'poll' },
      { name: 'quiet', mode: 'poll' },
    ]);
  });

  it('notifications: off wins, with a warning saying waitForReply will not see replies', async () => {
    const { instances, warnings } = await consumed(', notifications: off');
    expect(instances).toEqual([{ name: 'default', mode: 'poll' }]);
    expect(warnings).toEqual(['instance quiet has notifications: off, so waitForReply never sees a reply on it']);
  });
});
