import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import type { ClientOptions } from '../../src/client/options.js';
import { createRateLimiter } from '../../src/util/rate-limit.js';
import { ManualClock } from '../../src/util/clock.js';
import { ID, PERSONAL, TOKEN } from './helpers/fixtures.js';
import { RecordingClock } from './helpers/recording-clock.js';
import { startScriptServer, type ScriptServer } from './helpers/script-server.js';
import { waitFor } from '../support/wait.js';

let server: ScriptServer;
const clients: MsgflowClient[] = [];

function make(over: Partial<ClientOptions>): MsgflowClient {
  const c = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, ...over });
  clients.push(c);
  return c;
}

beforeEach(async () => {
  server = await startScriptServer();
  server.fallback = { json: [] };
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server.close();
});

describe('client-side rate limiting', () => {
  it('3 getChatHistory calls at the published 1/s ask for 1000 ms waits', async () => {
    const clock = new RecordingClock();
    const c = make({ clock });
    for (let i = 0; i < 3; i++) await c.getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([1000, 1000]);
    expect(server.requests).toHaveLength(3);
  });

  it('switched off: no waits', async () => {
    const clock = new RecordingClock();
    const c = make({ clock, rateLimit: false });
    for (let i = 0; i < 3; i++) await c.getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([]);
  });

  it('a per-method rate of 0 means unlimited; other methods keep their limits', async () => {
    const clock = new RecordingClock();
    const c = make({ clock, rateLimits: { getChatHistory: 0, lastOutgoingMessages: 4 } });
    for (let i = 0; i < 3; i++) await c.getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([]);
    for (let i = 0; i < 3; i++) await c.lastOutgoingMessages();
    expect(clock.sleeps).toEqual([250, 250]);
  });

  it('methods are limited independently', async () => {
    const clock = new RecordingClock();
    const c = make({ clock });
    await c.getChatHistory({ chatId: PERSONAL });
    await c.lastOutgoingMessages();
    expect(clock.sleeps).toEqual([]);
  });

  it('concurrent calls wait their turn in order (none is rejected)', async () => {
    const clock = new ManualClock(0);
    const c = make({ clock });
    const calls = [0, 1, 2].map(() => c.getChatHistory({ chatId: PERSONAL }));
    await waitFor('server.requests.length === 1 && clock.pending === 2', () => server.requests.length === 1 && clock.pending === 2);
    await clock.advance(999);
    expect(server.requests).toHaveLength(1);
    await clock.advance(1);
    await waitFor('server.requests.length === 2', () => server.requests.length === 2);
    await clock.advance(1000);
    await expect(Promise.all(calls)).resolves.toEqual([[], [], []]);
    expect(server.requests).toHaveLength(3);
  });

  it('retries take their turn too', async () => {
    const clock = new RecordingClock();
    server.script({ status: 503, json: {} }, { json: [] });
    const c = make({ clock, rateLimits: { getChatHistory: 0.5 }, retryBaseDelayMs: 0, retryMaxDelayMs: 0 });
    await c.getChatHistory({ chatId: PERSONAL });
    // backoff 0, then the limiter spaces the retry 2000 ms after the first attempt
    expect(clock.sleeps).toEqual([0, 2000]);
  });
});

describe('createRateLimiter', () => {
  it('spaces acquisitions by 1000 / rate ms', async () => {
    const clock = new RecordingClock();
    const limiter = createRateLimiter(4, clock);
    for (let i = 0; i < 4; i++) await limiter.acquire();
    expect(clock.sleeps).toEqual([250, 250, 250]);
  });

  it('does not wait when calls are already far enough apart', async () => {
    const clock = new ManualClock(0);
    const limiter = createRateLimiter(2, clock);
    await limiter.acquire();
    await clock.advance(600);
    await limiter.acquire();
    expect(clock.pending).toBe(0);
  });

  it('an aborted wait gives its slot back', async () => {
    const clock = new ManualClock(0);
    const limiter = createRateLimiter(1, clock);
    await limiter.acquire();
    const ac = new AbortController();
    const waiting = limiter.acquire(ac.signal);
    ac.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    // The next caller gets the slot at 1000 ms, not at 2000 ms.
    const next = limiter.acquire();
    await clock.advance(1000);
    await expect(next).resolves.toBeUndefined();
  });

  it('rate 0 never waits', async () => {
    const clock = new RecordingClock();
    const limiter = createRateLimiter(0, clock);
    for (let i = 0; i < 5; i++) await limiter.acquire();
    expect(clock.sleeps).toEqual([]);
  });
});
