/**
 * An incoming message whose text carries CR, ESC and an OSC 52 clipboard
 * write, logged by a flow: the human log line shows the control characters
 * (`\r`, `\x1b`), so no forged log line and no terminal sequence reaches the
 * terminal; the JSON log lines stay JSON and carry the text as it was.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const HOSTILE = 'hi there\r2026-01-01T00:00:00.000Z ERROR forged line\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u009b31m\u202eevil';

// YAML double-quoted escapes: the seed holds the raw characters.
const yamlText = HOSTILE.replace(/\r/g, '\\r')
  .replace(/\x1b/g, '\\e')
  .replace(/\x07/g, '\\a')
  .replace(/\u009b/g, '\\x9b')
  .replace(/\u202e/g, '\\u202e');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function peekProject(): string {
  const dir = project({
    'config.yaml': LOCAL_CONFIG.replace('sendIntervalMs: 500', 'sendIntervalMs: 500\n      seed: seed.yaml'),
    'seed.yaml': `chats:\n  - chatId: "79001112233@c.us"\n    messages:\n      - { type: incoming, typeMessage: textMessage, textMessage: "${yamlText}" }\n`,
    'flows/peek.yaml': `name: peek
steps:
  - id: history
    uses: getChatHistory
    with: { chatId: "79001112233@c.us", count: 1 }
  - id: say
    uses: log
    with:
      message: "got \${{ steps.history.output[0].textMessage }}"
`,
  });
  dirs.push(dir);
  return dir;
}

describe('untrusted text in the terminal', () => {
  it('a log line shows the control characters of an incoming message instead of obeying them', async () => {
    const r = await cli(['run', 'peek'], peekProject());
    expect(r.code, r.stderr).toBe(0);
    const all = r.stdout + r.stderr;
    // Nothing a terminal would act on: no CR, ESC, BEL, C1 or bidi control anywhere.
    expect(all).not.toMatch(/[\r\x1b\x07\u0080-\u009f\u202a-\u202e]/);
    const line = r.stderr.split('\n').find((l) => l.includes('got hi there'))!;
    expect(line).toMatch(
      /^\S+ INFO {2}got hi there\\r2026-01-01T00:00:00\.000Z ERROR forged line\\x1b\]52;c;cm0gLXJmIH4=\\x07\\x1b\[2J\\u009b31m\\u202eevil/,
    );
    // The forged text stays inside the real line: no line of its own.
    expect(r.stderr.split('\n').filter((l) => l.includes('forged line'))).toEqual([line]);
  });

  it('JSON log lines stay JSON and carry the text as it was', async () => {
    const r = await cli(['run', 'peek', '--json-logs'], peekProject());
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('{'));
    const records = lines.map((l) => JSON.parse(l) as { msg: string });
    expect(records.find((x) => x.msg.startsWith('got '))?.msg).toBe(`got ${HOSTILE}`);
    expect(r.stderr).not.toMatch(/[\r\x1b\x07\u0080-\u009f\u202a-\u202e]/);
  });
});
