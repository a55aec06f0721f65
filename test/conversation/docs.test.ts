import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers.js';
import { yamlBlocks, yamlContent as content } from '../support/docs.js';

describe('docs/conversations.md', () => {
  it('shows only YAML that is a tested flow or flow test of the repository, as written there', () => {
    const doc = readFileSync(path.join(REPO, 'docs/conversations.md'), 'utf8');
    const blocks = yamlBlocks(doc);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const tested = ['flows/welcome.yaml', 'flows/welcome.test.yaml'].map((f) => content(readFileSync(path.join(REPO, f), 'utf8')));
    for (const block of blocks)
      expect(
        tested.some((t) => t.includes(content(block))),
        block.slice(0, 80),
      ).toBe(true);
  });
});
