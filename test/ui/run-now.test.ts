/**
 * What the API gives Run now beyond inputs: a sample event for a
 * notification-triggered flow (checked like a notification the flow would
 * receive), what a run started now would wait for (a closed send window),
 * each step's records by outcome, and the favicon.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_MAX_BYTES } from '../../src/ui/run-now.js';
import { LOCAL_ID, get, post, runNowFlows, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';

const OPENS_IN_MS = 2 * 3_600_000;

/** A flow on a notification about the account, not a chat (deviceInfo): its event has no chat and no message id. */
const BATTERY_FLOW = `name: battery
on:
  notification: { type: deviceInfo }
steps:
  - id: said
    uses: log
    with: { message: "battery \${{ event.deviceData.battery }}" }
`;

describe('Run now through the API', () => {
  let p: Project;
  let before: number;
  beforeAll(async () => {
    before = Date.now();
    p = await startProject({ unpaced: true, flows: { ...runNowFlows(OPENS_IN_MS), 'battery.yaml': BATTERY_FLOW } });
  });
  afterAll(async () => {
    await p?.close();
  });

  const message = (chatId: unknown, text: string) => ({
    typeWebhook: 'incomingMessageReceived',
    instanceData: { idInstance: Number(LOCAL_ID), wid: '79990000000@c.us', typeInstance: 'whatsapp' },
    senderData: { chatId, chatName: 'Alice', sender: chatId, senderName: 'Alice', senderContactName: 'Alice' },
    messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
  });
  const start = (flow: string, body: unknown) => post(`${p.url}/api/flows/${flow}/runs`, body);

  it('starts a notification-triggered flow with a sample event as `event`, as flows see a notification', async () => {
    const started = await start('greet', { event: message('79001112233@c.us', ' Hi ') });
    expect(started.status).toBe(201);
    const id: string = started.body.runId;
    const done = await waitFor('the greet run to end', async () => {
      const r = await p.runtime.engine.getRun(id);
      return r && r.status !== 'running' ? r : undefined;
    });
    expect(done.status).toBe('succeeded');
    expect(done.trigger).toBe('manual');
    // The instance id is removed and the config name added; the type, time and message id are filled in.
    expect(done.event).toMatchObject({
      typeWebhook: 'incomingMessageReceived',
      instance: 'default',
      senderData: { chatId: '79001112233@c.us' },
    });
    expect(done.event!.idMessage).toMatch(/^SAMPLE[0-9A-F]{16}$/);
    expect(typeof done.event!.timestamp).toBe('number');
    expect(JSON.stringify(done.event)).not.toContain(LOCAL_ID);
    const steps = await p.runtime.engine.getSteps(id);
    expect(steps[0]).toMatchObject({ step: 'menu', status: 'succeeded' });
  });

  it('starts a flow on an account notification (deviceInfo) with a sample event that has no chat, adding no message id', async () => {
    const started = await start('battery', { event: { typeWebhook: 'deviceInfo', deviceData: { platform: 'android', battery: 15 } } });
    expect(started.status).toBe(201);
    const id: string = started.body.runId;
    const done = await waitFor('the battery run to end', async () => {
      const r = await p.runtime.engine.getRun(id);
      return r && r.status !== 'running' ? r : undefined;
    });
    expect(done.status).toBe('succeeded');
    expect(done.event).toMatchObject({ typeWebhook: 'deviceInfo', deviceData: { battery: 15 } });
    expect(done.event!.idMessage).toBeUndefined();
    const steps = await p.runtime.engine.getSteps(id);
    expect(steps[0]).toMatchObject({ step: 'said', status: 'succeeded', output: { message: 'battery 15' } });
  });

  it('refuses a sample event the flow would never receive, naming the field', async () => {
    const refused = async (flow: string, event: unknown) => {
      const r = await start(flow, { event });
      expect(r.status).toBe(400);
      return r.body.error as { field: string; message: string };
    };
    expect(await refused('greet', 'hi')).toMatchObject({ field: 'event', message: expect.stringMatching(/JSON object/) });
    expect(await refused('greet', { ...message('79001112233@c.us', 'hi'), typeWebhook: 'outgoingMessageStatus' })).toMatchObject({
      field: 'event.typeWebhook',
      message: expect.stringMatching(/expected 'incomingMessageReceived'/),
    });
    expect(await refused('greet', message('Alice', 'hi'))).toMatchObject({
      field: 'event.senderData.chatId',
      message: expect.stringMatching(/chat id/),
    });
    expect(await refused('greet', message('79001112233@c.us', 'hello'))).toMatchObject({
      field: 'event.messageData',
      message: expect.stringMatching(/"hello" does not match \/\^\(hi\|menu\)\$\/i/),
    });
    expect(await refused('check-some', message('79001112233@c.us', 'hi'))).toMatchObject({
      field: 'event',
      message: expect.stringMatching(/not started by notifications/),
    });
  });

  it('refuses a sample event over the size or depth limit before reading it', async () => {
    const big = await start('greet', { event: { ...message('79001112233@c.us', 'hi'), padding: 'x'.repeat(EVENT_MAX_BYTES) } });
    expect(big).toMatchObject({ status: 400, body: { error: { field: 'event', message: expect.stringMatching(/over the limit/) } } });
    // 5,000 levels: more than a recursive reader of the value would survive; the body's own limit refuses it.
    const post = (depth: number) =>
      fetch(`${p.url}/api/flows/greet/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ event: { ...message('79001112233@c.us', 'hi'), nested: 'DEEP' } }).replace(
          '"DEEP"',
          '{"a":'.repeat(depth) + '{}' + '}'.repeat(depth),
        ),
      });
    const deepest = await post(5000);
    expect(deepest.status).toBe(400);
    expect(((await deepest.json()) as { error: { field: string; message: string } }).error).toMatchObject({
      field: 'body',
      message: expect.stringMatching(/nested more than 64 levels deep/),
    });
    // Within the body's limit, a sample event has its own, lower one: no notification nests that deep.
    const deep = await post(20);
    expect(deep.status).toBe(400);
    const { error } = (await deep.json()) as { error: { field: string; message: string } };
    expect(error.field).toBe('event.nested.a.a.a.a.a.a.a');
    expect(error.message).toMatch(/deeper than 8 levels/);
    expect((await p.runtime.engine.listRuns({ flow: 'greet' })).every((r) => r.event?.padding === undefined)).toBe(true);
  });

  it('tells when a closed send window opens, before a run is started', async () => {
    const { status, body } = await get(`${p.url}/api/flows/brochure/preflight`);
    expect(status).toBe(200);
    expect(body.waits).toHaveLength(1);
    const [w] = body.waits;
    expect(w).toMatchObject({ step: 'send', action: 'files.broadcast', reason: expect.stringMatching(/^send window .* is closed$/) });
    // The window's start as written: OPENS_IN_MS after the project was written.
    expect(w.until).toBeGreaterThanOrEqual(Math.floor((before + OPENS_IN_MS) / 1000) * 1000 - 1000);
    expect(w.until).toBeLessThanOrEqual(body.at + OPENS_IN_MS);
    expect((await get(`${p.url}/api/flows/check-some/preflight`)).body.waits).toEqual([]);
    expect((await get(`${p.url}/api/flows/nope/preflight`)).status).toBe(404);
    // Nothing was started by asking.
    expect(await p.runtime.engine.listRuns({ flow: 'brochure' })).toEqual([]);
  });

  it("gives each step's records by outcome: done, failed, invalid, duplicate, skipped, waiting", async () => {
    const started = await start('check-some', {});
    const id: string = started.body.runId;
    await waitFor('check-some to succeed', async () => (await p.runtime.engine.getRun(id))?.status === 'succeeded');
    const run = await get(`${p.url}/api/runs/${id}`);
    // 8 rows: 3 with an account, 3 without, '12' invalid, one number twice.
    expect(run.body.steps[0]).toMatchObject({
      total: 8,
      done: 6,
      failed: 0,
      invalid: 1,
      duplicate: 1,
      skipped: 0,
      waiting: 0,
    });
  });

  it('serves a favicon, as SVG for the page and as /favicon.ico', async () => {
    const ico = await fetch(`${p.url}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get('content-type')).toBe('image/x-icon');
    expect(Buffer.from(await ico.arrayBuffer()).subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
    const svg = await fetch(`${p.url}/favicon.svg`);
    expect(svg.status).toBe(200);
    expect(svg.headers.get('content-type')).toBe('image/svg+xml');
    expect((await get(`${p.url}/`)).text).toContain('<link rel="icon" href="/favicon.svg"');
  });
});
