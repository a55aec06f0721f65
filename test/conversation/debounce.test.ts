/**
 * debounce: several quick messages of one chat start one run, on the engine
 * clock, under `msgflow start`'s wiring (local service over HTTP, consumers,
 * flows from YAML, ManualClock); gathered messages survive a stop inside the
 * window; each chat is gathered apart.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';
import { ALICE, BOB, startProject, type Project } from './support.js';

/** examples/conversations/flows/batch.yaml (mode all), or its mode last twin. */
const batch = (mode: 'last' | 'all') => {
  const text = readFileSync(path.join(import.meta.dirname, '../../examples/conversations/flows/batch.yaml'), 'utf8');
  return mode === 'all'
    ? text
    : text
        .replace('mode: all', 'mode: last')
        .replace(/message: .*$/m, 'message: "last ${{ event.messageData.textMessageData.textMessage }}"');
};

let p: Project | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/** Until the chats were sent these texts, the engine clock moving a second per look. */
async function sentUntil(pr: Project, want: Record<string, string[]>): Promise<void> {
  let got: Record<string, string[]> = {};
  await waitFor(
    `the chats to be sent ${JSON.stringify(want)}`,
    async () => {
      await pr.clock.advance(1000);
      got = Object.fromEntries(await Promise.all(Object.keys(want).map(async (c) => [c, await pr.sent(c)] as const)));
      return JSON.stringify(got) === JSON.stringify(want);
    },
    { context: () => JSON.stringify(got) },
  );
}

/** Until the consumer has recorded `n` messages of the chat (they reached the dispatcher). */
async function recorded(pr: Project, chat: string, n: number): Promise<void> {
  await waitFor(`${n} messages of ${chat} recorded`, async () => {
    const [e] = await pr.runtime.store.kv('shared:incoming').entries<{ lastSeq: number }>(`local-`);
    const all = await pr.runtime.store.kv('shared:incoming').entries<{ lastSeq: number }>();
    return e !== undefined && all.some(([k, v]) => k.endsWith(`:${chat}`) && v.lastSeq === n);
  });
}

describe('debounce', () => {
  it('starts one run for quick messages of a chat, with all of them in order, once the window has passed; chats apart', async () => {
    p = await startProject({ 'batch.yaml': batch('all') });
    for (const t of ['one', 'two', 'three']) {
      await p.say(ALICE, t);
      await p.clock.advance(1000); // within the window of the last: still gathering
    }
    await p.say(BOB, 'solo');
    await recorded(p, ALICE, 3);
    await recorded(p, BOB, 1);
    expect(await p.runtime.engine.listRuns({ flow: 'batch' })).toEqual([]);
    await sentUntil(p, { [ALICE]: ['got 3 from one to three'], [BOB]: ['got 1 from solo to solo'] });
    expect(await p.runtime.engine.listRuns({ flow: 'batch' })).toHaveLength(2);
  });

  it('gives the run the last message only with mode last', async () => {
    p = await startProject({ 'batch.yaml': batch('last') });
    await p.say(ALICE, 'first');
    await p.say(ALICE, 'second');
    await recorded(p, ALICE, 2);
    await sentUntil(p, { [ALICE]: ['last second'] });
    expect(await p.runtime.engine.listRuns({ flow: 'batch' })).toHaveLength(1);
  });

  it('loses nothing gathered when msgflow stops inside the window', async () => {
    p = await startProject({ 'batch.yaml': batch('all') });
    await p.say(ALICE, 'before');
    await p.say(ALICE, 'the stop');
    await recorded(p, ALICE, 2);
    const { dir } = p;
    const at = p.clock.now() + 1000;
    await p.close({ keep: true });
    p = await startProject({}, '', { dir, at });
    await p.say(ALICE, 'after');
    await recorded(p, ALICE, 3);
    await sentUntil(p, { [ALICE]: ['got 3 from before to after'] });
    expect(await p.runtime.engine.listRuns({ flow: 'batch' })).toHaveLength(1);
  });
});
