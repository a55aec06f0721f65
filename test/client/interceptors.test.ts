/**
 * The client interceptor chain (client/interceptors.ts) around a real
 * client of the local service over HTTP: interceptors see each call in order,
 * answer it themselves or pass it on, possibly changed; one sees only the
 * methods it applies to; a getter target is
 * built when a call first needs it; notifications() is the client's own loop.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { interceptApi, type ApiInterceptor } from '../../src/client/interceptors.js';
import { callMetrics, type ApiCallEvent } from '../../src/runtime/clients.js';
import { A, ALICE, conformanceConfig, startLocal, type LocalUnderTest } from '../support/local-service.js';
import type { ManualClock } from '../../src/util/clock.js';

let h: LocalUnderTest<ManualClock>;
let client: MsgflowClient;

beforeEach(async () => {
  h = await startLocal({
    kind: 'http',
    config: conformanceConfig((raw) => {
      (raw.instances as Record<string, unknown>[])[0]!.settings = { incomingWebhook: 'yes' };
    }),
  });
  // Through the harness's transport: h.requests records what reaches the service.
  client = createClient({ apiUrl: h.url, ...A, rateLimit: false, transport: h.transportFor(A) });
});
afterEach(async () => {
  await client.close();
  await h.close();
});

/** Records `name:method` as a call goes down the chain, then passes it on. */
const recorder = (name: string, seen: string[]): ApiInterceptor => ({
  name,
  call: (c, next) => (seen.push(`${name}:${c.method}`), next()),
});

describe('the client interceptor chain', () => {
  it('interceptors see each call in order; one may answer it itself, or change it before the client sends it', async () => {
    const seen: string[] = [];
    const answers: ApiInterceptor = {
      name: 'answers',
      call: async (c, next) => (c.method === 'getStateInstance' ? { stateInstance: 'blocked' } : next()),
    };
    const left: string[] = [];
    const claims: ApiInterceptor = {
      name: 'claims',
      call(c, next) {
        // What the BullMQ item host does: a claim taken as the call leaves (CallOptions.beforeSend).
        c.options = { ...c.options, beforeSend: async () => void left.push(c.method) };
        return next();
      },
    };
    const api = interceptApi(client, [recorder('first', seen), answers, recorder('second', seen), claims]);

    expect(await api.getStateInstance({})).toEqual({ stateInstance: 'blocked' });
    const sent = await api.sendMessage({ chatId: ALICE, message: 'hi' });
    expect(sent.idMessage).toEqual(expect.any(String));
    expect(seen).toEqual(['first:getStateInstance', 'first:sendMessage', 'second:sendMessage']);
    expect(left).toEqual(['sendMessage']);
    // Only what an interceptor passed on reached the service.
    expect(h.requests.map((r) => r.method)).toEqual(['sendMessage']);
  });

  it('an interceptor whose appliesTo leaves a method out is not in that method\u2019s chain', async () => {
    const seen: string[] = [];
    const asked: string[] = [];
    const writesOnly: ApiInterceptor = {
      ...recorder('writes', seen),
      appliesTo: (method, spec) => (asked.push(method), spec.writes),
    };
    const api = interceptApi(client, [writesOnly, recorder('all', seen)]);
    // Asked once per method, when the chain is built: not again per call.
    const askedAtBuild = asked.length;
    expect(askedAtBuild).toBeGreaterThan(50);
    await api.getStateInstance({});
    await api.sendMessage({ chatId: ALICE, message: 'hi' });
    await api.getStateInstance({});
    expect(seen).toEqual(['all:getStateInstance', 'writes:sendMessage', 'all:sendMessage', 'all:getStateInstance']);
    expect(asked).toHaveLength(askedAtBuild);
    expect(h.requests.map((r) => r.method)).toEqual(['getStateInstance', 'sendMessage', 'getStateInstance']);
  });

  it('a getter target is built when a call first needs it; notifications() is the target client\u2019s own loop', async () => {
    let built = 0;
    let made: Promise<MsgflowClient> | undefined;
    const seen: string[] = [];
    const api = interceptApi(() => (made ??= Promise.resolve((built++, client))), [recorder('chain', seen)]);
    expect(built).toBe(0);
    await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'hello' });
    const ac = new AbortController();
    for await (const n of api.notifications({ signal: ac.signal })) {
      expect(n.body.typeWebhook).toBe('incomingMessageReceived');
      ac.abort();
    }
    expect(built).toBe(1);
    // The loop's own receive and delete calls are the client's, not the chain's.
    expect(seen).toEqual([]);
  });

  it('a getter that gives its client itself (no promise) is called each time and its client used at once', async () => {
    let asked = 0;
    const api = interceptApi(() => (asked++, client), []);
    await api.getStateInstance({});
    await api.getStateInstance({});
    expect(asked).toBe(2);
    expect(h.requests.map((r) => r.method)).toEqual(['getStateInstance', 'getStateInstance']);
  });

  it('the metrics interceptor reports each call while someone hears of them, and passes calls on untimed when nobody does', async () => {
    const events: ApiCallEvent[] = [];
    let heard = false;
    const api = interceptApi(client, [
      callMetrics(
        'default',
        (e) => events.push(e),
        h.clock,
        () => heard,
      ),
    ]);
    await api.getStateInstance({});
    heard = true;
    await api.getStateInstance({});
    await expect(api.sendMessage({ chatId: 'not-a-chat', message: 'x' })).rejects.toThrow();
    expect(events.map((e) => [e.method, e.outcome])).toEqual([
      ['getStateInstance', 'ok'],
      ['sendMessage', 'VALIDATION_FAILED'],
    ]);
    expect(h.requests.map((r) => r.method)).toEqual(['getStateInstance', 'getStateInstance']);
  });
});
