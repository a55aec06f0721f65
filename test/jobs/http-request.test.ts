/**
 * http.request against a real node:http server: the answer as output, retries
 * by the one failure classification (5xx and 429 again, Retry-After honoured,
 * 4xx final), no answer in time, private addresses refused unless allowed,
 * and a dry run that prints the request instead of sending it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstanceApi } from '../../src/api/types.js';
import { MsgflowError } from '../../src/api/errors.js';
import { httpRequest } from '../../src/actions/http-request.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { ManualClock } from '../../src/util/clock.js';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';
import { waitFor } from '../support/wait.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = (req: Seen, n: number, res: ServerResponse) => void;

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A server answering each request with `answer` (n counts from 1); `seen` records them. */
async function serve(answer: Answer): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(s);
      answer(s, seen.length, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const ctx = (clock?: ManualClock) => createActionTestContext({ client: {} as InstanceApi, ...(clock ? { clock } : {}) });

async function failure(p: Promise<unknown>): Promise<MsgflowError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(MsgflowError);
  return e as MsgflowError;
}

describe('http.request', () => {
  it('sends JSON with headers and query, and returns status, headers, text and parsed json', async () => {
    const srv = await serve((req, _n, res) => json(res, 201, { id: 7, got: JSON.parse(req.body) }, { 'x-trace': 'abc' }));
    const out = await runAction(httpRequest, ctx(), {
      method: 'POST',
      url: `${srv.url}/leads`,
      query: { source: 'msgflow' },
      headers: { Authorization: 'Bearer k-123' },
      json: { phone: 79001112233 },
      allowPrivate: true,
    });
    expect(out).toMatchObject({ status: 201, ok: true, json: { id: 7, got: { phone: 79001112233 } }, attempts: 1 });
    expect((out as { headers: Record<string, string> }).headers['x-trace']).toBe('abc');
    expect(srv.seen[0]).toMatchObject({ method: 'POST', url: '/leads?source=msgflow' });
    expect(srv.seen[0]!.headers).toMatchObject({ authorization: 'Bearer k-123', 'content-type': 'application/json' });
  });

  it('sends a form body, and with failOnStatus: false returns a 4xx answer as output', async () => {
    const srv = await serve((_req, _n, res) => {
      res.writeHead(422, { 'content-type': 'text/plain' });
      res.end('bad lead');
    });
    const out = await runAction(httpRequest, ctx(), {
      method: 'POST',
      url: srv.url,
      form: { name: 'Alice Smith', n: 2 },
      failOnStatus: false,
      allowPrivate: true,
    });
    expect(out).toMatchObject({ status: 422, ok: false, text: 'bad lead', json: null });
    expect(srv.seen[0]!.body).toBe('name=Alice+Smith&n=2');
    expect(srv.seen[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
  });

  it('tries a 5xx again with backoff until it answers, and never tries a 4xx twice', async () => {
    const flaky = await serve((_req, n, res) => (n < 3 ? json(res, 503, { error: 'busy' }) : json(res, 200, { ok: 1 })));
    const out = await runAction(httpRequest, ctx(), { url: flaky.url, retry: { attempts: 3, delay: '5ms' }, allowPrivate: true });
    expect(out).toMatchObject({ status: 200, attempts: 3 });
    expect(flaky.seen).toHaveLength(3);

    const missing = await serve((_req, _n, res) => json(res, 404, { error: 'no such lead' }));
    const e = await failure(
      runAction(httpRequest, ctx(), { url: `${missing.url}/leads/9?key=s3cr3t`, retry: { delay: '5ms' }, allowPrivate: true }),
    );
    expect(e.code).toBe('HTTP_STATUS');
    expect(e.status).toBe(404);
    // The query string (it may hold a key) is not in the message.
    expect(e.message).toBe(`GET ${missing.url}/leads/9 answered HTTP 404`);
    expect(missing.seen).toHaveLength(1);
  });

  it("honours a 429's Retry-After: the next attempt waits that long on the run's clock", async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T09:00:00Z'));
    const srv = await serve((_req, n, res) => (n === 1 ? json(res, 429, {}, { 'retry-after': '120' }) : json(res, 200, { ok: 1 })));
    const done = runAction(httpRequest, ctx(clock), { url: srv.url, retry: { maxDelay: '5m' }, allowPrivate: true });
    await waitFor('the retry to sleep', () => clock.pending === 1);
    expect(clock.wakeTimes()).toEqual([clock.now() + 120_000]);
    await clock.advance(119_000);
    expect(srv.seen).toHaveLength(1);
    await clock.advance(1_000);
    expect(await done).toMatchObject({ status: 200, attempts: 2 });
    expect(srv.seen).toHaveLength(2);
  });

  it('stops retrying when Retry-After asks for longer than maxDelay', async () => {
    const srv = await serve((_req, _n, res) => json(res, 503, {}, { 'retry-after': '3600' }));
    const e = await failure(runAction(httpRequest, ctx(), { url: srv.url, retry: { maxDelay: '1m' }, allowPrivate: true }));
    expect(e.code).toBe('HTTP_STATUS');
    expect(srv.seen).toHaveLength(1);
  });

  it('fails with TIMEOUT when no answer comes in time, and NETWORK_ERROR when nothing listens', async () => {
    const silent = await serve(() => undefined);
    const t = await failure(
      runAction(httpRequest, ctx(), { url: silent.url, timeout: '150ms', retry: { attempts: 1 }, allowPrivate: true }),
    );
    expect(t.code).toBe('TIMEOUT');
    expect(t.message).toBe(`GET ${silent.url}/: no answer within 150 ms`);

    const n = await failure(
      runAction(httpRequest, ctx(), { url: 'http://127.0.0.1:9/', retry: { attempts: 2, delay: '5ms' }, allowPrivate: true }),
    );
    expect(n.code).toBe('NETWORK_ERROR');
  });

  it('refuses loopback and private addresses unless allowPrivate, before connecting', async () => {
    const srv = await serve((_req, _n, res) => json(res, 200, {}));
    const byIp = await failure(runAction(httpRequest, ctx(), { url: srv.url }));
    expect(byIp.code).toBe('HTTP_ADDRESS_REFUSED');
    expect(byIp.message).toContain('127.0.0.1, a loopback address; set allowPrivate: true');
    const port = new URL(srv.url).port;
    // A name is checked on the addresses it resolves to.
    const byName = await failure(runAction(httpRequest, ctx(), { url: `http://localhost:${port}/`, retry: { attempts: 3, delay: '5ms' } }));
    expect(byName.code).toBe('HTTP_ADDRESS_REFUSED');
    expect(srv.seen).toHaveLength(0);
  });
});

describe('http.request in a flow', () => {
  const flowYaml = (url: string) => `name: crm
steps:
  - id: post
    uses: http.request
    with:
      method: POST
      url: ${url}/leads
      json: { phone: "79001112233", source: "\${{ run.flow }}" }
      allowPrivate: true
  - id: say
    uses: log
    with: { message: "lead \${{ steps.post.output.json.id }} (HTTP \${{ steps.post.output.status }})" }
`;

  function crmProject(url: string): string {
    const dir = project({
      'config.yaml': remoteConfig('tok-http-request-1', 'store:\n  driver: memory\n'),
      'flows/crm.yaml': flowYaml(url),
    });
    dirs.push(dir);
    return dir;
  }

  it("runs from YAML: a later step reads the answer's json and status", async () => {
    const srv = await serve((_req, _n, res) => json(res, 200, { id: 'L-42' }));
    const r = await cli(['run', 'crm'], crmProject(srv.url));
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('lead L-42 (HTTP 200)');
    expect(JSON.parse(srv.seen[0]!.body)).toEqual({ phone: '79001112233', source: 'crm' });
  });

  it('a dry run prints the request and sends nothing', async () => {
    const srv = await serve((_req, _n, res) => json(res, 200, { id: 'L-42' }));
    const r = await cli(['run', 'crm', '--dry-run'], crmProject(srv.url));
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      `dry run: would send POST ${srv.url}/leads (headers: user-agent, content-type) body: {"phone":"79001112233","source":"crm"}`,
    );
    expect(srv.seen).toHaveLength(0);
  });

  it('validate refuses two bodies in one step, naming the step', async () => {
    const dir = crmProject('http://example.invalid');
    const bad = flowYaml('http://example.invalid').replace('allowPrivate: true', 'body: "x"\n      allowPrivate: true');
    writeFileSync(`${dir}/flows/crm.yaml`, bad);
    const r = await cli(['validate'], dir);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/flows\/crm\.yaml:\d+:\d+.*give one body: json, form or body, not json and body/);
  });
});

describe("config.yaml's http.allowPrivate", () => {
  const flow = (url: string) => `name: crm
steps:
  - id: post
    uses: http.request
    with: { url: "${url}/leads", retry: { attempts: 1 } }
  - id: say
    uses: log
    with: { message: "HTTP \${{ steps.post.output.status }}" }
`;
  function crm(url: string, http: string): string {
    const dir = project({
      'config.yaml': remoteConfig('tok-http-request-2', `store:\n  driver: memory\nhttp:\n  ${http}\n`),
      'flows/crm.yaml': flow(url),
    });
    dirs.push(dir);
    return dir;
  }

  it('lets every step reach the listed private hosts and CIDR ranges (or all with true), and still refuses the others', async () => {
    const srv = await serve((_req, _n, res) => json(res, 200, {}));
    const port = new URL(srv.url).port;
    const byName = `http://localhost:${port}`;
    for (const [url, http] of [
      [byName, 'allowPrivate: [LocalHost]'],
      [srv.url, 'allowPrivate: [10.0.0.0/8, 127.0.0.0/8]'],
      [srv.url, 'allowPrivate: [127.0.0.1]'],
      [srv.url, 'allowPrivate: true'],
    ] as const) {
      const r = await cli(['run', 'crm'], crm(url, http));
      expect(r.stderr, http).toContain('HTTP 200');
      expect(r.code).toBe(0);
    }
    expect(srv.seen).toHaveLength(4);
    // A host name listed does not open the address it resolves to under another name, nor other ranges.
    for (const [url, http] of [
      [srv.url, 'allowPrivate: [localhost]'],
      [byName, 'allowPrivate: [10.0.0.0/8]'],
      [srv.url, 'allowPrivate: false'],
    ] as const) {
      const r = await cli(['run', 'crm'], crm(url, http));
      expect(r.code, http).not.toBe(0);
      expect(r.stderr).toContain('a loopback address');
      expect(r.stderr).toContain('http.allowPrivate in config.yaml');
    }
    expect(srv.seen).toHaveLength(4);
  });

  it('an entry that is no host name, address or CIDR range is a config error naming it', async () => {
    const r = await cli(['validate'], crm('http://example.invalid', 'allowPrivate: [crm.lan, 10.0.0.0/40]'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/config\.yaml:\d+:\d+ http\.allowPrivate\[1\]: '10\.0\.0\.0\/40' has an invalid prefix length/);
  });
});
