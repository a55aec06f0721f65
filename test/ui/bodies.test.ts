/**
 * Request bodies the dashboard will not take: nested too deep (400 naming the
 * limit, never a 500), or over 1 MiB (413 written before the connection
 * closes, also to a client that waits for `100 Continue`). Raw sockets: the
 * wire is the subject.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../support/raw-http.js';
import { post, startProject, type Project } from './helpers.js';

let p: Project;
beforeAll(async () => {
  p = await startProject();
});
afterAll(() => p.close());

/** JSON text nested `depth` deep (JSON.stringify would overflow the test's own stack). */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

async function postText(url: string, text: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
  return { status: res.status, body: await res.json() };
}

const head = (port: number, length: number, extra = '') =>
  `POST /api/flows/check-some/runs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('dashboard request bodies', () => {
  it('refuses an input nested 5,000 deep with a 400 naming the depth limit', async () => {
    const r = await postText(`${p.url}/api/flows/check-some/runs`, `{"inputs":{"numbers":${nested(5000)}}}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: 'UI_BAD_REQUEST',
      field: 'body',
      message: 'body: nested more than 64 levels deep, the most a request body may be',
    });
    // 64 levels in all are taken: the body, inputs and the value itself count.
    const ok = await post(`${p.url}/api/flows/check-some/runs`, { inputs: { numbers: ['79001112233'] }, dryRun: true });
    expect(ok.status).toBe(201);
  });

  it('answers 413 to a body announced over 1 MiB with Expect: 100-continue, without inviting it', async () => {
    const port = p.server.port;
    // A server that invites the body (100 Continue) has failed already: no need to wait for more.
    const x = await rawExchange(port, [head(port, 2 * 1024 * 1024, 'Expect: 100-continue\r\n')], {
      until: (r) => r.statuses.includes(100),
    });
    expect(x.statuses).toEqual([413]);
    expect(JSON.parse(x.lastBody)).toEqual({ error: { code: 'PAYLOAD_TOO_LARGE', message: 'request body is larger than 1048576 bytes' } });
  });

  it('answers 413 to a body sent over 1 MiB before it closes the connection', async () => {
    const port = p.server.port;
    const size = 2 * 1024 * 1024;
    // Chunked: the server learns the size only as the bytes come.
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    const chunks: Array<string | Buffer> = [
      `POST /api/flows/check-some/runs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    ];
    for (let sent = 0; sent < size; sent += chunk.length) chunks.push(`${chunk.length.toString(16)}\r\n`, chunk, '\r\n');
    chunks.push('0\r\n\r\n');
    const x = await rawExchange(port, chunks);
    expect(x.statuses).toEqual([413]);
    expect(x.lastBody).toContain('PAYLOAD_TOO_LARGE');
    // Announced without Expect: answered before any of it is read.
    const y = await rawExchange(port, [head(port, size), Buffer.alloc(size, 0x20)]);
    expect(y.statuses).toEqual([413]);
  });
});
