import { loadConfig } from '../../runtime/frontend.js';
import { chatOf, openSessions, type SessionView } from '../../runtime/sessions.js';
import { clip, formatUntil } from '../../runtime/present.js';
import { parseCommand, subcommandOf } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, type Io } from '../output.js';
import { columns } from '../table.js';

/**
 * `msgflow sessions`: the dialogs' sessions (one per instance, flow and chat):
 * list, `show CHAT` (state, vars, history, last lines), `reset CHAT` (the
 * chat's next message starts afresh). Reads the store alone, so it works
 * beside a running `msgflow start`.
 */
export async function sessions(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('sessions', argv);
  const { sub, arg: chat } = subcommandOf('sessions', positionals, {
    subs: ['show', 'reset'],
    arg: 'a CHAT (a chat id or a phone number)',
  });
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const store = openSessions(config);
  const flow = typeof values.flow === 'string' ? values.flow : undefined;
  try {
    if (sub === 'reset') {
      const gone = await store.reset({ chat: chat!, ...(flow ? { flow } : {}) });
      if (gone.length === 0) {
        io.err(`msgflow: no session with ${chatOf(chat!)} (msgflow sessions lists them)`);
        return EXIT.FAILURE;
      }
      for (const s of gone) io.out(`reset: ${s.flow} with ${s.chatId} (was in ${s.state}); its next message starts afresh`);
      return EXIT.OK;
    }
    const list = await store.list({ ...(flow ? { flow } : {}), ...(chat ? { chat } : {}) });
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (sub === 'show' && list.length === 0) {
      io.err(`msgflow: no session with ${chatOf(chat!)} (msgflow sessions lists them)`);
      return EXIT.FAILURE;
    } else io.out(sub === 'show' ? list.map((s) => formatSession(s, Date.now())).join('\n\n') : formatSessionsTable(list, Date.now()));
    return EXIT.OK;
  } finally {
    await store.close();
  }
}

const when = (ms: number, now: number) => formatUntil(ms, now, { utc: true });

function statusOf(s: SessionView, now: number): string {
  if (s.status === 'ended') return `ended (${s.endReason ?? 'end'})`;
  if (s.status === 'handover') return 'handed over';
  return s.idleAt !== undefined && s.idleAt <= now ? 'idle' : 'active';
}

/** One line per session: chat, flow, state, status, last activity. */
export function formatSessionsTable(list: readonly SessionView[], now: number): string {
  if (list.length === 0) return 'no sessions';
  const rows = list.map((s) => [s.chatId, s.flow, s.state, statusOf(s, now), when(s.updatedAt, now)]);
  const header = ['CHAT', 'FLOW', 'STATE', 'STATUS', 'LAST'];
  return columns(header, rows).join('\n');
}

/** A session in full: where it is, its vars, the states before, the last lines of the chat. */
export function formatSession(s: SessionView, now: number): string {
  const lines = [
    `${s.chatId} in ${s.flow} (instance ${s.instance})`,
    `  state:    ${s.state} (${statusOf(s, now)})`,
    `  started:  ${when(s.startedAt, now)}; last: ${when(s.updatedAt, now)}; messages: ${s.seq}`,
    ...(s.idleAt !== undefined && s.status !== 'ended' ? [`  idle at:  ${when(s.idleAt, now)}`] : []),
    `  history:  ${s.history.length ? s.history.join(' > ') : '(none)'}`,
    `  vars:     ${Object.keys(s.vars).length ? JSON.stringify(s.vars) : '(none)'}`,
    '  last lines:',
    ...s.recent.map((l) => `    ${l.from === 'bot' ? 'bot ' : 'user'}  ${clip(l.text.replace(/\s+/g, ' '), 70)}`),
  ];
  return lines.join('\n');
}
