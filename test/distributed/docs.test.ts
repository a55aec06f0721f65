/**
 * The flows docs/distributed.md shows, loaded as written: where each of
 * their steps runs with the bullmq executor (placement, the one rule the
 * engine applies).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import type { Flow } from '../../src/engine/flow/types.js';
import { placement } from '../../src/engine/run/executor.js';
import { BUILTIN_JOB_ACTIONS } from '../../src/actions/builtins.js';
import { builtinRegistry } from '../engine-load/helpers.js';
import { REPO } from '../conversation/helpers.js';
import { tempDir } from '../support/local-service.js';

const registry = builtinRegistry();
for (const a of BUILTIN_JOB_ACTIONS) if (!registry.get(a.name)) registry.register(a, 'builtin');

/** Each flow of the doc's YAML blocks, loaded from a project of its own. */
async function docFlows(): Promise<Map<string, Flow>> {
  const doc = readFileSync(path.join(REPO, 'docs/distributed.md'), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => /^name: /m.test(b));
  const dir = await tempDir('msgflow-distributed-docs-');
  mkdirSync(path.join(dir, 'flows'));
  mkdirSync(path.join(dir, 'data'));
  writeFileSync(path.join(dir, 'data/recipients.csv'), 'phone,firstName\n79001112233,Ana\n');
  const flows = new Map<string, Flow>();
  for (const [i, block] of blocks.entries()) {
    const file = path.join(dir, `flows/doc-${i}.yaml`);
    writeFileSync(file, block);
    const flow = loadFlowFile(file, { registry, baseDir: dir, env: {} });
    flows.set(flow.name, flow);
  }
  return flows;
}

const where = (flow: Flow) => Object.fromEntries(flow.steps.map((s) => [s.id, placement(s, registry.get(s.uses))]));

describe('docs/distributed.md: which steps go to the workers', () => {
  it('a job goes to the workers, any other step stays in the process that drives the run unless it says executor: workers', async () => {
    const offer = (await docFlows()).get('offer');
    expect(offer && where(offer)).toEqual({ campaign: 'workers', audit: 'workers', notify: 'local' });
  });

  it('a dialog step stays in the daemon unless the conversation says executor: workers', async () => {
    const bot = (await docFlows()).get('hello-bot');
    expect(bot && where(bot)).toEqual({ dialog: 'workers' });
    const welcome = loadFlowFile(path.join(REPO, 'flows/welcome.yaml'), { registry, baseDir: REPO, env: {} });
    expect(where(welcome)).toEqual({ dialog: 'local', lead: 'local' });
  });

  it('a forEach step goes to the workers unless it says executor: local; a sub-flow step never does', () => {
    const step = (over: Record<string, unknown>) => ({ uses: 'log', ...over });
    expect(placement(step({ forEach: '${{ inputs.list }}' }), registry.get('log'))).toBe('workers');
    expect(placement(step({ forEach: '${{ inputs.list }}', executor: 'local' }), registry.get('log'))).toBe('local');
    expect(placement(step({ uses: 'flow/child', executor: 'workers' }), undefined)).toBe('local');
  });
});
