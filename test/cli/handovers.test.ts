/**
 * `msgflow handovers` in-process (runCli) on a project's lowdb store: the
 * chats handed to a human, and release CHAT giving one back.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/config/identity.js';
import { Handovers } from '../../src/engine/conversation/handover.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { systemClock } from '../../src/util/clock.js';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const CONFIG = remoteConfig('handover-cli-token-4e1b', 'store: { driver: lowdb, dir: .msgflow/state }\n');

describe('msgflow handovers', () => {
  it('lists the chats handed to a human with who, until when and why; release CHAT gives one back; an unknown one exits 1', async () => {
    const dir = project({ 'config.yaml': CONFIG });
    const config = loadConfig(path.join(dir, 'config.yaml'));
    const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
    const h = new Handovers({ store, clock: systemClock, identityFor: (n) => identityOf(config, n) });
    const { until } = await h.begin('default', '79001112233@c.us', {
      by: 'operator',
      reason: 'the operator wrote from the phone',
      forMs: 3_600_000,
    });
    await h.begin('default', '79002223344@c.us', { by: 'api', reason: 'asked for a human' });
    await store.close();
    const list = await cli(['handovers'], dir);
    expect(list.code).toBe(0);
    const hhmm = new Date(until!).toISOString().slice(11, 16);
    expect(list.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^INSTANCE +CHAT +BY +UNTIL +REASON$/),
      expect.stringMatching(
        new RegExp(`^default +79001112233@c.us +operator +${hhmm}Z \\((\\d+m|1h00m)\\) +the operator wrote from the phone$`),
      ),
      expect.stringMatching(/^default +79002223344@c.us +api +until released +asked for a human$/),
      'release with: msgflow handovers release CHAT',
    ]);
    // Secrets stay out of what it prints.
    expect(list.stdout).not.toContain('handover-cli-token-4e1b');
    const release = await cli(['handovers', 'release', '79001112233'], dir);
    expect(release.code).toBe(0);
    expect(release.stdout).toContain('released: 79001112233@c.us on default; the bot answers it again');
    const json = JSON.parse((await cli(['handovers', '--json'], dir)).stdout) as Array<{ chatId: string }>;
    expect(json.map((x) => x.chatId)).toEqual(['79002223344@c.us']);
    const none = await cli(['handovers', 'release', '79009990000@c.us'], dir);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('chat 79009990000@c.us is not handed over');
    expect((await cli(['handovers', 'lift'], dir)).code).toBe(2);
  });
});
