import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers.js';

/** The lines of a YAML text that are not comments or blank. */
const content = (yaml: string) =>
  yaml
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'))
    .join('\n');

describe('docs/conversations.md', () => {
  it('shows only YAML that is a tested flow or flow test of the repository, as written there', () => {
    const doc = readFileSync(path.join(REPO, 'docs/conversations.md'), 'utf8');
    const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const tested = ['flows/welcome.yaml', 'flows/welcome.test.yaml'].map((f) => content(readFileSync(path.join(REPO, f), 'utf8')));
    for (const block of blocks)
      expect(
        tested.some((t) => t.includes(content(block))),
        block.slice(0, 80),
      ).toBe(true);
  });
});
