import { loadConfig } from '../../runtime/frontend.js';
import { openHandovers, type Handover } from '../../runtime/handovers.js';
import { formatUntil } from '../../runtime/present.js';
import { parseCommand, subcommandOf } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, type Io } from '../output.js';
import { columns } from '../table.js';

/**
 * `msgflow handovers`: the chats handed to a human (the bot keeps quiet in
 * them); `msgflow handovers release CHAT` gives one back to the bot at once.
 */
export async function handovers(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('handovers', argv);
  const { sub, arg: target } = subcommandOf('handovers', positionals, { subs: ['release'], arg: 'a CHAT (a chat ID, or a phone number)' });
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const store = openHandovers(config);
  try {
    if (sub === 'release') {
      const chatId = /^\+?\d+$/.test(target!) ? `${target!.replace(/^\+/, '')}@c.us` : target!;
      const released = await store.release(chatId);
      if (released.length === 0) {
        io.err(`msgflow: chat ${chatId} is not handed over (msgflow handovers lists them)`);
        return EXIT.FAILURE;
      }
      for (const h of released) io.out(`released: ${h.chatId} on ${h.instance}; the bot answers it again`);
      return EXIT.OK;
    }
    const list = await store.list();
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else io.out(list.length === 0 ? 'no chats handed over' : formatHandovers(list, Date.now()));
    return EXIT.OK;
  } finally {
    await store.close();
  }
}

/** One line per chat: instance, chat, by whom, until when (UTC), why; then how to release. */
export function formatHandovers(list: readonly Handover[], now: number): string {
  const rows = list.map((h) => [
    h.instance,
    h.chatId,
    h.by,
    h.until === undefined ? 'until released' : formatUntil(h.until, now, { utc: true }),
    h.reason ?? '',
  ]);
  const header = ['INSTANCE', 'CHAT', 'BY', 'UNTIL', 'REASON'];
  return [...columns(header, rows), 'release with: msgflow handovers release CHAT'].join('\n');
}
