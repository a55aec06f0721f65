/**
 * The dashboard's event streams under clients that do not read: what the
 * daemon holds for each stays bounded (events held back, progress coalesced,
 * the client dropped past a bound), streams are capped per client address and
 * in all, and a follower that reads still gets every event. Raw sockets: a
 * client that never reads cannot be made with fetch.
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';
import { post, readEvents, startProject } from './helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A full garbage collection (the flag is set at run time: vitest's workers do not start with --expose-gc). */
function collectGarbage(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** A GET whose answer is never read: the socket's receive window fills, then the server's writes pile up. */
function stalledGet(port: number, target: string, localAddress = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      s.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
      // Nothing reads it: node reads up to its buffer's high-water mark, then the kernel's window fills.
      s.pause();
      resolve(s);
    });
    s.on('error', () => {});
    s.once('error', reject);
  });
}

/** A GET read to its end (or `maxBytes`): the status line and body. */
function rawGet(port: number, target: string, localAddress = '127.0.0.1'): Promise<{ status: number; text: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      s.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`),
    );
    let text = '';
    s.on('data', (c: Buffer) => {
      text += c.toString('utf8');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      // A stream stays open: its head and first line are enough.
      if (m && (m[1] !== '200' ? /\r\n\r\n[\s\S]*\}/.test(text) : /\r\n\r\n[\s\S]*\n\n/.test(text))) {
        resolve({ status: Number(m[1]), text, socket: s });
      }
    });
    s.on('error', reject);
  });
}

function manyItemsFlow(n: number): string {
  const items = JSON.stringify(Array.from({ length: n }, (_, i) => i));
  // About 2.5 KB per log line: a follower that does not read falls megabytes behind within the run.
  return `name: many
inputs:
  n:
    type: array
    default: ${items}
steps:
  - id: each
    uses: log
    forEach: \${{ inputs.n }}
    with:
      message: "item \${{ item }} ${'x'.repeat(2500)}"
`;
}

describe('dashboard event streams', () => {
  it('holds a bounded number of bytes for 100 followers that never read, while a follower that reads gets every event', async () => {
    const N = 2500;
    const p = await startProject({ streams: { perClient: 200, total: 200 } });
    cleanups.push(() => p.close());
    writeFileSync(path.join(p.dir, 'flows', 'many.yaml'), manyItemsFlow(N));
    const port = p.server.port;
    const gc = collectGarbage();

    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const stalled: net.Socket[] = [];
    for (let i = 0; i < 100; i++) stalled.push(await stalledGet(port, '/api/events?flow=many'));
    for (let i = 0; i < 10; i++) stalled.push(await stalledGet(port, '/api/events'));
    cleanups.push(() => stalled.forEach((s) => s.destroy()));
    await waitFor('the 110 streams to open', () => p.server.streams.size === 110);

    // The largest amount one stream held in the server, and the heap at its fullest, over the run.
    let maxBuffered = 0;
    let maxHeap = 0;
    let seen = 0;
    p.runtime.bus.on('item:finished', () => {
      maxBuffered = Math.max(maxBuffered, ...p.server.streams.buffered());
      if (++seen % 500 === 0) {
        gc();
        maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed);
      }
    });

    const reading = readEvents(`${p.url}/api/events?flow=many`, (e) => e.event === 'bus' && e.data.name === 'run:finished', 120_000);
    await waitFor('the reading follower', () => p.server.follow.clients === 101);
    const started = await post(`${p.url}/api/flows/many/runs`, {});
    expect(started.status).toBe(201);
    const events = (await reading).filter((e) => e.event === 'bus' && e.data.event.runId === started.body.runId);

    // The reader got every event of the run, in order.
    const items = events.filter((e) => e.data.name === 'item:finished').map((e) => e.data.event.index);
    expect(items).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(events[0]!.data.name).toBe('run:started');
    expect(events.at(-1)!.data.name).toBe('run:finished');

    // Each stalled stream: at most its high-water mark plus what it may hold back (64 KiB + 256 KiB), plus one event.
    expect(maxBuffered).toBeLessThan(330 * 1024);
    // Those that fell that far behind were let go.
    expect(p.server.follow.clients).toBeLessThan(100);
    gc();
    maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed);
    // 100 followers buffering ~6 MB each would hold ~600 MB; bounded streams hold at most ~33 MB together.
    expect(maxHeap - heapBefore).toBeLessThan(80 * 1024 * 1024);
  }, 120_000);

  it('coalesces step progress to the latest per step while a follower is not reading, and delivers the rest in order', async () => {
    const p = await startProject();
    cleanups.push(() => p.close());
    const port = p.server.port;
    const s = await stalledGet(port, '/api/events?flow=f');
    cleanups.push(() => void s.destroy());
    await waitFor('the follower', () => p.server.follow.clients === 1);
    const bus = p.runtime.bus;
    const ref = { runId: 'r1', flow: 'f' };
    // Fill the socket until the server holds events back (the kernel takes a few MB first).
    const big = 'y'.repeat(32 * 1024);
    let sent = 0;
    while ((p.server.streams.buffered()[0] ?? 0) < 64 * 1024) {
      bus.emit('log', { level: 'info', message: big, fields: { ...ref, n: sent++ } });
      await new Promise((r) => setImmediate(r));
    }
    // Now held back: 1,000 progress events of one step, with a log line between every hundred.
    for (let done = 1; done <= 1000; done++) {
      bus.emit('step:progress', { ...ref, step: 'check', done, total: 1000 });
      if (done % 100 === 0) bus.emit('log', { level: 'info', message: `mark ${done}`, fields: ref });
    }
    expect(p.server.streams.buffered()[0]).toBeLessThan(330 * 1024);

    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString('utf8')));
    s.resume();
    await waitFor('every held event to arrive', () => text.includes('mark 1000'));
    const names = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as { name: string; event: any });
    // Every log line arrived, in order.
    const logs = names.filter((e) => e.name === 'log');
    expect(logs.filter((e) => typeof e.event.fields.n === 'number').map((e) => e.event.fields.n)).toEqual(
      Array.from({ length: sent }, (_, i) => i),
    );
    expect(logs.filter((e) => e.event.message.startsWith('mark')).map((e) => e.event.message)).toEqual(
      Array.from({ length: 10 }, (_, i) => `mark ${(i + 1) * 100}`),
    );
    // The progress: a few at most (written before the hold began), and the latest among them.
    const progress = names.filter((e) => e.name === 'step:progress').map((e) => e.event.done);
    expect(progress.length).toBeLessThan(10);
    expect(progress.at(-1)).toBe(1000);
  });

  it('refuses a stream over the limit per client address (429) and in all (503), with a body saying so', async () => {
    const p = await startProject({ streams: { perClient: 2, total: 3 } });
    cleanups.push(() => p.close());
    const port = p.server.port;
    const open: net.Socket[] = [];
    cleanups.push(() => open.forEach((s) => s.destroy()));
    for (let i = 0; i < 2; i++) {
      const r = await rawGet(port, '/api/events?flow=x');
      expect(r.status).toBe(200);
      open.push(r.socket);
    }
    const third = await rawGet(port, '/api/events');
    open.push(third.socket);
    expect(third.status).toBe(429);
    expect(third.text).toContain('UI_STREAMS_PER_CLIENT');
    expect(third.text).toContain('already holds 2 event streams');

    // Another loopback address is another client: its first stream is the third in all; the next is one too many.
    const other = await rawGet(port, '/api/events', '127.0.0.2');
    open.push(other.socket);
    expect(other.status).toBe(200);
    const full = await rawGet(port, '/api/events', '127.0.0.3');
    open.push(full.socket);
    expect(full.status).toBe(503);
    expect(full.text).toContain('UI_STREAMS_FULL');
    expect(full.text).toContain('already serves 3 event streams');

    // A stream closed frees its place.
    open[0]!.destroy();
    await waitFor('the closed stream to be let go', () => p.server.streams.size === 2);
    const again = await rawGet(port, '/api/events');
    open.push(again.socket);
    expect(again.status).toBe(200);
  });
});
