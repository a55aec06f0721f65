import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { pickVariant } from '../../src/actions/message-content.js';
import type { RecipientRecord } from '../../src/actions/broadcast-records.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import type { Message } from '../../src/api/types.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import type { FileServer } from '../support/file-server.js';
import { formatRunSummary } from '../../src/cli/run-format.js';
import {
  drainQueue,
  localConfig,
  startPdfServer,
  tempDir,
  writeData,
  type LocalUnderTest,
  closedAfterEach,
} from '../support/local-service.js';

let files: FileServer;
beforeAll(async () => void (files = await startPdfServer()));
afterAll(() => files.close());
const { local, virtualClock: startedClock } = closedAfterEach();

/** The service and the job on one VirtualClock, as `msgflow test` runs them (see files-broadcast.test.ts). */
function virtualClock(at = Date.now(), timeZone?: string): VirtualClock {
  return startedClock(at, timeZone === undefined ? {} : { timeZone });
}

async function setup(o: { at?: number; population?: string[]; timeZone?: string } = {}) {
  const dir = await tempDir();
  const clock = virtualClock(o.at, o.timeZone);
  const base = localConfig();
  const config = o.population
    ? { ...base, network: { ...base.network, population: o.population.map((prefix) => ({ prefix, share: 1 })) } }
    : base;
  const l = await local({ dir, clock, config });
  const store = createMemoryStore();
  const t = () => createActionTestContext({ client: l.client, clock, store, baseDir: dir });
  return { dir, clock, l, store, t };
}

const PEOPLE = [
  { phone: '79001112233', firstName: 'Alice', lat: '55.75', lon: '37.61', city: 'Moscow', pick: 'Tea|Coffee' },
  { phone: '+7 900 222-33-44', firstName: 'Bob', lat: '59.93', lon: '30.33', city: 'Petersburg', pick: 'Juice|Water' },
];
const CHATS = ['79001112233@c.us', '79002223344@c.us'];

/** The outgoing messages of each chat, as the service's history has them. */
async function outgoing(l: LocalUnderTest, chats: string[]): Promise<Record<string, Message[]>> {
  await drainQueue(l);
  const out: Record<string, Message[]> = {};
  // The history is newest first: oldest first here, in the order they were sent.
  for (const chatId of chats) out[chatId] = (await l.client.getChatHistory({ chatId })).filter((m) => m.type === 'outgoing').reverse();
  return out;
}

const base = { recipients: PEOPLE, follow: { deadline: 0 }, reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 } };

describe('messages.broadcast', () => {
  it("sends every message kind once per recipient, each from the recipient's row", async () => {
    const { dir, l, t } = await setup();
    await writeData(dir, 'media/menu.pdf', '%PDF-1.4 the menu');
    const kinds: [string, Record<string, unknown>, (m: Message, i: number) => unknown][] = [
      ['text', { text: 'Hello ${{ row.firstName }}' }, (m) => m.textMessage],
      [
        'file',
        { file: { url: files.url('/brochure.pdf'), fileName: 'brochure.pdf', caption: 'For ${{ row.firstName }}' } },
        (m) => m.caption,
      ],
      ['upload', { upload: { path: 'media/menu.pdf', caption: 'Menu, ${{ row.firstName }}' } }, (m) => `${m.fileName} ${m.caption}`],
      ['poll', { poll: { question: '${{ row.firstName }}, which?', options: '${{ row.pick }}' } }, (m) => m.pollMessageData],
      [
        'location',
        { location: { latitude: '${{ row.lat }}', longitude: '${{ row.lon }}', name: '${{ row.city }}' } },
        (m) => m.location?.nameLocation,
      ],
      ['contact', { contact: { phone: 79003334455, firstName: 'Carol for ${{ row.firstName }}' } }, (m) => m.contact?.displayName],
      [
        'buttons',
        {
          buttons: {
            body: 'Hi ${{ row.firstName }}',
            buttons: [{ type: 'url', buttonId: '1', buttonText: 'Site', url: 'https://example.com' }],
          },
        },
        (m) => m.interactiveButtons?.body,
      ],
    ];
    for (const [kind, message] of kinds) {
      // One campaign per kind: each keeps its own per-recipient records.
      const s = await runAction(messagesBroadcast, t(), { ...base, message, campaign: kind, report: `reports/${kind}.csv` });
      expect(s, kind).toMatchObject({ recipients: 2, sent: 2, failed: 0, invalid: 0, unknown: 0 });
    }
    const sent = await outgoing(l, CHATS);
    const seen = (chat: number) => sent[CHATS[chat]!]!.map((m, i) => kinds[i]![2](m, i));
    expect(seen(0)).toEqual([
      'Hello Alice',
      'For Alice',
      'menu.pdf Menu, Alice',
      { name: 'Alice, which?', options: [{ optionName: 'Tea' }, { optionName: 'Coffee' }], multipleAnswers: false },
      'Moscow',
      'Carol for Alice',
      'Hi Alice',
    ]);
    expect(seen(1)[0]).toBe('Hello Bob');
    expect(sent[CHATS[1]!]![4]!.location).toMatchObject({ latitude: 59.93, longitude: 30.33 });
    // uploaded once per run, sent by its link
    expect(l.requests.filter((r) => r.method === 'uploadFile')).toHaveLength(1);
    const csv = await readFile(path.join(dir, 'reports/poll.csv'), 'utf8');
    expect(csv.split('\r\n')[0]).toBe(
      'chatId,where,variant,kind,outcome,idMessage,status,sentAt,deliveredAt,readAt,repliedAt,instance,reconciled,resent,text,error',
    );
    expect(csv).toContain(',poll,sent,');
    expect(csv).toContain('"Alice, which?"');
  });

  it('A/B variants: each recipient gets one variant by weight, the same in every pass and run, and the report names it', async () => {
    const { dir, l, t } = await setup({ population: ['7901'] });
    const people = Array.from({ length: 40 }, (_, i) => ({ phone: `790100000${String(i).padStart(2, '0')}`, firstName: `P${i}` }));
    const variants = [
      { name: 'warm', weight: 3, message: { text: 'Hi ${{ row.firstName }}!' } },
      { name: 'plain', weight: 1, message: { poll: { question: 'Interested, ${{ row.firstName }}?', options: ['yes', 'no'] } } },
    ];
    const input = { ...base, recipients: people, variants, campaign: 'ab', report: 'reports/ab.csv' };
    const s = await runAction(messagesBroadcast, t(), input);
    expect(s).toMatchObject({ recipients: 40, sent: 40 });
    const chats = people.map((p) => `${p.phone}@c.us`);
    const sent = await outgoing(l, chats);
    const csv = (await readFile(path.join(dir, 'reports/ab.csv'), 'utf8')).split('\r\n').slice(1, -1);
    const byChat = new Map(csv.map((line) => [line.split(',')[0]!, line.split(',')[2]!]));
    let warm = 0;
    for (const [i, chat] of chats.entries()) {
      const [m] = sent[chat]!;
      const variant = byChat.get(chat);
      expect(variant, chat).toBe(
        pickVariant(
          variants.map((v) => ({ ...v })),
          'ab',
          chat,
        ).variant.name,
      );
      if (variant === 'warm') {
        warm++;
        expect(m!.textMessage).toBe(`Hi P${i}!`);
      } else expect(m!.pollMessageData?.name).toBe(`Interested, P${i}?`);
      expect(sent[chat]).toHaveLength(1);
    }
    // weights 3:1 over 40 recipients
    expect(warm).toBeGreaterThan(20);
    expect(warm).toBeLessThan(40);
    // a later run of the campaign with other weights sends nobody again, and keeps each one's variant
    const sends = l.requests.length;
    const again = await runAction(messagesBroadcast, t(), { ...input, variants: [variants[0]!, { ...variants[1]!, weight: 100 }] });
    expect(again).toMatchObject({ sent: 40 });
    expect(l.requests.slice(sends).filter((r) => r.method.startsWith('send'))).toEqual([]);
    const csv2 = (await readFile(path.join(dir, 'reports/ab.csv'), 'utf8')).split('\r\n').slice(1, -1);
    expect(new Map(csv2.map((line) => [line.split(',')[0]!, line.split(',')[2]!]))).toEqual(byChat);
  });

  it('a lost answer of a poll is found at the service by its content; one that never reached it is sent again once', async () => {
    const { l, t } = await setup();
    const ctx = t();
    const message = { poll: { question: 'Lunch, ${{ row.firstName }}?', options: ['yes', 'no'] } };
    // Alice: the poll went out, the process died before the record; Bob: the intent only.
    await l.client.sendPoll({ chatId: CHATS[0]!, message: 'Lunch, Alice?', options: [{ optionName: 'yes' }, { optionName: 'no' }] });
    // A poll to Alice with other options is not hers: reconciliation matches the whole content.
    await l.client.sendPoll({ chatId: CHATS[0]!, message: 'Lunch, Alice?', options: [{ optionName: 'maybe' }, { optionName: 'no' }] });
    const content = (name: string) => `poll\nLunch, ${name}?\nyes\nno`;
    for (const [i, name] of ['Alice', 'Bob'].entries()) {
      await ctx.ctx.state.set(`r:${CHATS[i]}`, {
        chatId: CHATS[i]!,
        where: 'x',
        caption: `Lunch, ${name}?`,
        content: content(name),
        phase: 'intent',
        runId: 'run-1',
        attemptKey: name,
        intentAt: ctx.ctx.clock.now() - 5000,
      } satisfies RecipientRecord);
    }
    const s = await runAction(messagesBroadcast, ctx, { ...base, message });
    expect(s).toMatchObject({ sent: 2, reconciled: 1, resent: 1, unknown: 0 });
    const sent = await outgoing(l, CHATS);
    expect(sent[CHATS[0]!]!.map((m) => m.pollMessageData?.options?.[0]?.optionName)).toEqual(['yes', 'maybe']);
    expect(sent[CHATS[1]!]!.map((m) => m.pollMessageData?.name)).toEqual(['Lunch, Bob?']);
  });

  it('a field from the row that the method refuses makes that row invalid; a field written wrong stops the job naming it', async () => {
    const { dir, l, t } = await setup();
    const rows = [PEOPLE[0], { ...PEOPLE[1], lat: 'north' }];
    const message = { location: { latitude: '${{ row.lat }}', longitude: '${{ row.lon }}' } };
    const s = await runAction(messagesBroadcast, t(), { ...base, recipients: rows, message, report: 'reports/loc.csv' });
    expect(s).toMatchObject({ recipients: 1, invalid: 1, sent: 1 });
    expect(await readFile(path.join(dir, 'reports/loc.csv'), 'utf8')).toMatch(/79002223344@c\.us,[^,]*,,,invalid,.*latitude/);
    const before = l.requests.length;
    await expect(runAction(messagesBroadcast, t(), { ...base, message: { location: { latitude: 200, longitude: 1 } } })).rejects.toThrow(
      /message\.location\.latitude/,
    );
    expect(l.requests.filter((r) => r.method === 'sendLocation').length).toBe(
      l.requests.slice(0, before).filter((r) => r.method === 'sendLocation').length,
    );
  });

  it('the funnel counts per variant: queued, sent, delivered, read, replied within the window, opted out; in the summary, a CSV and runs show', async () => {
    const { dir, clock, t } = await setup();
    const ctx = t();
    // Bob is on the opt-out list; Alice's reply is recorded (as the notification consumer records it) 5 s after the start.
    await ctx.ctx.shared('opt-out').set(`inst-test:${CHATS[1]}`, { at: clock.now() - 1000 });
    const reply = { idMessage: 'R1', seq: 1, at: clock.now() + 5000, typeMessage: 'textMessage', text: 'yes' };
    await ctx.ctx.shared('incoming').set(`inst-test:${CHATS[0]}`, { messages: [reply], lastSeq: 1 });
    const s = await runAction(messagesBroadcast, ctx, {
      ...base,
      message: { text: 'Hi ${{ row.firstName }}' },
      follow: { deadline: '5s', poll: '250ms', until: 'read' },
      report: 'reports/f.csv',
    });
    expect(s.funnel).toEqual({ all: { queued: 2, sent: 1, delivered: 1, read: 1, replied: 1, optedOut: 1, failed: 0, unknown: 0 } });
    expect(s.funnelReport).toBe('reports/f.funnel.csv');
    expect(await readFile(path.join(dir, 'reports/f.funnel.csv'), 'utf8')).toBe(
      'variant,queued,sent,delivered,read,replied,optedOut,failed,unknown\r\nall,2,1,1,1,1,1,0,0\r\n',
    );
    expect(await readFile(path.join(dir, 'reports/f.csv'), 'utf8')).toContain(new Date(reply.at).toISOString());
    const shown = formatRunSummary({ id: 'r', flow: 'f', status: 'succeeded', startedAt: 0, updatedAt: 0, finishedAt: 1000 } as never, [
      { step: 'campaign', action: 'messages.broadcast', status: 'succeeded', output: s } as never,
    ]);
    expect(shown).toContain('funnel all: queued 2, sent 1, delivered 1, read 1, replied 1, optedOut 1, failed 0, unknown 0');
    expect(shown).toContain('funnel report: reports/f.funnel.csv');
  });
});
