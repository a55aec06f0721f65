import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/runtime/serve.js';

describe('msgflow serve', () => {
  it('refuses a config with no local: section, naming it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-serve-'));
    try {
      await writeFile(path.join(dir, 'config.yaml'), 'flowsDir: flows\n');
      await expect(serveCommand({ config: path.join(dir, 'config.yaml'), print: () => {} })).rejects.toThrow(/local: section/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
