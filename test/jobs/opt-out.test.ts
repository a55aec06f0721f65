/** optOut.add / optOut.remove on the instance-wide list (shared by every flow of the instance), through the action test kit. */
import { describe, expect, it } from 'vitest';
import type { InstanceApi } from '../../src/api/types.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { optOutAdd, optOutRemove, optOutKey, optOutList } from '../../src/actions/opt-out.js';
import { createMemoryStore } from '../../src/store/memory-store.js';

// The opt-out actions never call the service.
const client = {} as InstanceApi;
const ALICE = '79001112233@c.us';

describe('optOut.add / optOut.remove', () => {
  it('adds once, removes once, and reports whether the list changed', async () => {
    const store = createMemoryStore();
    const t = (runId: string, dryRun = false) => createActionTestContext({ client, store, runId, dryRun });
    const onList = async () => Boolean(await optOutList(t('probe').ctx).get(optOutKey('inst-test', ALICE)));

    expect(await runAction(optOutAdd, t('r1'), { chatId: ALICE })).toEqual({ chatId: ALICE, changed: true });
    expect(await onList()).toBe(true);
    expect(await runAction(optOutAdd, t('r2'), { chatId: ALICE })).toEqual({ chatId: ALICE, changed: false });
    // A dry run predicts without touching the list.
    expect(await runAction(optOutRemove, t('r3', true), { chatId: ALICE })).toEqual({ chatId: ALICE, changed: true });
    expect(await onList()).toBe(true);
    expect(await runAction(optOutRemove, t('r4'), { chatId: ALICE })).toEqual({ chatId: ALICE, changed: true });
    expect(await onList()).toBe(false);
    expect(await runAction(optOutRemove, t('r5'), { chatId: ALICE })).toEqual({ chatId: ALICE, changed: false });
  });

  it('refuses a chat id that is not a personal chat, naming the field', async () => {
    const t = createActionTestContext({ client });
    await expect(runAction(optOutAdd, t, { chatId: 'not-a-chat' })).rejects.toThrow(/chatId/);
  });
});
