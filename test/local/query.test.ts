import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSchema } from '../../src/local/config.js';
import { startLocal, type LocalUnderTest } from '../support/local-service.js';

describe('lastOutgoingMessages query string', () => {
  let local: LocalUnderTest;
  let base: string;
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-query-'));
    const config = LocalSchema.parse({
      dataDir: 'data',
      instances: [{ idInstance: '1101000001', apiTokenInstance: 'query-test-token', rateLimits: { lastOutgoingMessages: 0 } }],
    });
    local = await startLocal({ kind: 'http', dir, config });
    base = `${local.url}/waInstance1101000001/lastOutgoingMessages/query-test-token`;
  });
  afterAll(() => local.close());

  it.each([
    ['?minutes=60', 200, undefined],
    ['?minutes=', 200, undefined],
    ['', 200, undefined],
    ['?minutes=1.5', 400, "Validation failed. Details: 'minutes' must be an integer"],
    ['?minutes=0', 400, "Validation failed. Details: 'minutes' must be greater than or equal to 1"],
    ['?minutes=abc', 400, "Validation failed. Details: 'minutes' must be a number"],
    ['?minutes=99999999999999999999', 400, "Validation failed. Details: 'minutes' must be a number"],
  ])('GET %s answers %i', async (query, status, message) => {
    const res = await fetch(base + query);
    expect(res.status).toBe(status);
    const body = (await res.json()) as unknown;
    if (message) expect(body).toEqual({ message });
    else expect(Array.isArray(body)).toBe(true);
  });
});
