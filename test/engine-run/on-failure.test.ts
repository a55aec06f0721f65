/**
 * A step's `on-failure:` steps, from YAML through `msgflow run`: they run
 * when the step fails (reading steps.<id>.error), not when it succeeds; the
 * run still ends failed and later steps do not run; a step with
 * continueOnError goes on after them; validate checks them like any step.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** /data answers `dataStatus`; /alert records what it is sent. */
async function server(dataStatus: number): Promise<{ url: string; alerts: unknown[] }> {
  const alerts: unknown[] = [];
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      if (req.url === '/alert') alerts.push(JSON.parse(body));
      res.writeHead(req.url === '/data' ? dataStatus : 200, { 'content-type': 'application/json' });
      res.end('{"rows":3}');
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, alerts };
}

const flow = (url: string, continueOnError = false) => `name: nightly
steps:
  - id: fetch
    uses: http.request
    continueOnError: ${continueOnError}
    with: { url: "${url}/data", allowPrivate: true, retry: { attempts: 1 } }
    on-failure:
      - id: tell
        uses: http.request
        with:
          method: POST
          url: ${url}/alert
          allowPrivate: true
          json: { code: "\${{ steps.fetch.error.code }}", message: "\${{ steps.fetch.error.message }}" }
      - id: note
        uses: log
        with: { message: "alert sent: HTTP \${{ steps.tell.output.status }}" }
  - id: after
    uses: log
    with: { message: "after fetch: \${{ steps.fetch.status }}" }
`;

function dir(text: string): string {
  const d = project({ 'config.yaml': remoteConfig('tok-on-failure-1', 'store:\n  driver: memory\n'), 'flows/nightly.yaml': text });
  dirs.push(d);
  return d;
}

describe('on-failure steps', () => {
  it('run when the step fails, read its error, and the run still ends failed without the later steps', async () => {
    const srv = await server(503);
    const r = await cli(['run', 'nightly'], dir(flow(srv.url)));
    expect(r.code).not.toBe(0);
    expect(srv.alerts).toEqual([
      { code: 'HTTP_STATUS', message: `step 'fetch' (http.request) failed: GET ${srv.url}/data answered HTTP 503` },
    ]);
    expect(r.stderr).toContain('alert sent: HTTP 200');
    expect(r.stderr).not.toContain('after fetch');
  });

  it('do not run when the step succeeds', async () => {
    const srv = await server(200);
    const r = await cli(['run', 'nightly'], dir(flow(srv.url)));
    expect(r.code).toBe(0);
    expect(srv.alerts).toEqual([]);
    expect(r.stderr).toContain('after fetch: succeeded');
    expect(r.stderr).not.toContain('alert sent');
  });

  it('with continueOnError, the run goes on after them', async () => {
    const srv = await server(500);
    const r = await cli(['run', 'nightly'], dir(flow(srv.url, true)));
    expect(srv.alerts).toHaveLength(1);
    expect(r.stderr).toContain('after fetch: failed');
  });

  it('validate checks them like any step: positions, ids shared with the flow, what they read', async () => {
    const bad = flow('http://127.0.0.1:9')
      .replace('      - id: note', '      - id: after')
      .replace('uses: log\n        with: { message: "alert', 'uses: lgo\n        with: { message: "alert');
    const r = await cli(['validate'], dir(bad));
    expect(r.code).not.toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toMatch(/flows\/nightly\.yaml:\d+:\d+ steps\[0\]\.on-failure\[1\]\.uses: unknown action 'lgo'/);
    expect(out).toMatch(/steps\[1\]\.id: duplicate step id 'after' \(first used by steps\[0\]\.on-failure\[1\]\)/);
  });
});
