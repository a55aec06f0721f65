/**
 * Searching run history by chat id, phone number and error code (GET
 * /api/runs, the Runs page's search box), and replaying a run from its page:
 * its inputs and event copied into Run now. Browser parts in Debian's
 * chromium through playwright-core.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post, runNowFlows, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';
import { haveChromium, launchChromium } from '../support/chromium.js';

const ALICE = '79001112233@c.us';
const BOB = '79002223344@c.us';

const message = (chatId: string, text: string, senderName: string) => ({
  typeWebhook: 'incomingMessageReceived',
  senderData: { chatId, chatName: senderName, sender: chatId, senderName, senderContactName: senderName },
  messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
});

describe('run search and replay', () => {
  let p: Project;
  const ids: Record<string, string> = {};
  async function finished(flow: string, body: unknown): Promise<string> {
    // A writing flow runs one at a time: the run before may still be letting go of its slot (409) just after it ended.
    const started = await waitFor(`a ${flow} run to start`, async () => {
      const r = await post(`${p.url}/api/flows/${flow}/runs`, body);
      return r.status === 201 ? r : undefined;
    });
    const id: string = started.body.runId;
    await waitFor(`the ${flow} run to end`, async () => !['running', 'waiting'].includes((await p.runtime.engine.getRun(id))!.status));
    return id;
  }
  const runsOf = async (query: string) => ((await get(`${p.url}/api/runs?${query}`)).body.runs as Array<{ id: string }>).map((r) => r.id);

  beforeAll(async () => {
    p = await startProject({ unpaced: true, flows: runNowFlows() });
    ids.alice = await finished('greet', { event: message(ALICE, 'hi', 'Alice') });
    ids.bob = await finished('greet', { event: message(BOB, 'menu', 'Bob') });
    ids.failed = await finished('fail-some', {});
  }, 60_000);
  afterAll(async () => {
    await p?.close();
  });

  it('finds runs by the chat of the notification that started them, by its number in any notation, and by error code', async () => {
    expect(await runsOf(`chat=${encodeURIComponent(ALICE)}`)).toEqual([ids.alice]);
    expect(await runsOf(`phone=${encodeURIComponent('+7 900 222-33-44')}`)).toEqual([ids.bob]);
    expect(await runsOf('phone=79001112233&flow=greet')).toEqual([ids.alice]);
    expect(await runsOf('code=action_failed')).toEqual([ids.failed]);
    expect(await runsOf(`code=ACTION_FAILED&chat=${encodeURIComponent(ALICE)}`)).toEqual([]);
    expect(await runsOf('phone=79009999999')).toEqual([]);
  });

  it('refuses a search it cannot read, naming the field', async () => {
    const r = await get(`${p.url}/api/runs?chat=alice`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'UI_BAD_REQUEST', field: 'chat' });
    expect((await get(`${p.url}/api/runs?phone=12`)).body.error.field).toBe('phone');
  });

  describe.skipIf(!haveChromium())('in Chromium', () => {
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    let page: Page;
    beforeAll(async () => {
      browser = await launchChromium({ width: 1280, height: 800 });
      page = await browser.context.newPage();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });
    const rows = () => page.$$eval('tr[data-run]', (trs) => trs.map((tr) => tr.getAttribute('data-run')));

    it('the Runs page searches by phone number, chat id or error code from one box', async () => {
      await page.goto(`${p.url}/#/runs`);
      await page.waitForSelector(`tr[data-run="${ids.alice}"]`);
      for (const [text, expected] of [
        ['+7 900 222 33 44', [ids.bob]],
        [ALICE, [ids.alice]],
        ['ACTION_FAILED', [ids.failed]],
      ] as const) {
        await page.fill('input[name=search]', text);
        await page.click('form[role=search] button[type=submit]');
        await waitFor(`runs matching ${text}`, async () => JSON.stringify(await rows()) === JSON.stringify(expected));
        expect(await page.inputValue('input[name=search]')).toBe(text);
      }
    });

    it("Replay on a run's page opens Run now with its event filled in, and starts a run with it", async () => {
      await page.goto(`${p.url}/#/runs/${encodeURIComponent(ids.bob)}`);
      await page.click('button[data-action=replay]');
      await page.waitForSelector(`form[data-flow=greet] [data-replay="${ids.bob}"]`);
      expect(await page.inputValue('form[data-flow=greet] input[name="event.chatId"]')).toBe(BOB);
      expect(await page.inputValue('form[data-flow=greet] input[name="event.text"]')).toBe('menu');
      expect(await page.inputValue('form[data-flow=greet] input[name="event.senderName"]')).toBe('Bob');
      page.once('dialog', (d) => void d.accept());
      await page.click('form[data-flow=greet] button[type=submit]');
      await page.waitForURL(/#\/runs\/greet-/);
      const replayed = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
      expect(replayed).not.toBe(ids.bob);
      const run = await waitFor('the replayed run to end', async () => {
        const r = await p.runtime.engine.getRun(replayed);
        return r && r.status !== 'running' ? r : undefined;
      });
      expect(run.status).toBe('succeeded');
      expect(run.event).toMatchObject({ senderData: { chatId: BOB, senderName: 'Bob' } });
    });

    it("Replay carries a run's inputs into the form", async () => {
      const id = await finished('slow-check', { inputs: { numbers: '["79001112233","79002223344"]' } });
      await page.goto(`${p.url}/#/runs/${encodeURIComponent(id)}`);
      await page.click('button[data-action=replay]');
      await page.waitForSelector(`form[data-flow=slow-check] [data-replay="${id}"]`);
      expect(JSON.parse(await page.inputValue('form[data-flow=slow-check] input[name=numbers]'))).toEqual(['79001112233', '79002223344']);
    });
  });
});
