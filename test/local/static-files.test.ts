import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSchema } from '../../src/local/config.js';
import { startLocal, type LocalUnderTest } from '../support/local-service.js';

describe('local.staticDir under /_local/static/', () => {
  let local: LocalUnderTest;
  let url: string;
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-static-'));
    mkdirSync(path.join(dir, 'public/docs'), { recursive: true });
    writeFileSync(path.join(dir, 'public/docs/brochure.pdf'), '%PDF-1.4 demo');
    writeFileSync(path.join(dir, 'secret.txt'), 'outside');
    symlinkSync(path.join(dir, 'secret.txt'), path.join(dir, 'public/link.txt'));
    const config = LocalSchema.parse({ port: 0, staticDir: 'public', dataDir: 'data', instances: [] });
    local = await startLocal({ kind: 'http', dir, config });
    url = local.url;
  });
  afterAll(() => local.close());

  it('serves a file with its type', async () => {
    const res = await fetch(`${url}/_local/static/docs/brochure.pdf`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(await res.text()).toBe('%PDF-1.4 demo');
  });

  it('never leaves the folder: .., encoded slashes, symlinks out', async () => {
    for (const p of ['../secret.txt', '%2e%2e/secret.txt', 'docs%2F..%2F..%2Fsecret.txt', 'link.txt', 'docs', 'nope.pdf']) {
      const res = await fetch(`${url}/_local/static/${p}`);
      expect(res.status, p).toBe(404);
      expect(await res.text()).not.toContain('outside');
    }
  });

  it('answers 405 to other methods', async () => {
    const res = await fetch(`${url}/_local/static/docs/brochure.pdf`, { method: 'POST' });
    expect(res.status).toBe(405);
  });
});
