/** Help from one table: every command's help lists every flag it takes (`run --help` once omitted --new). */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { allOptions, COMMANDS_HELP, optionsOf } from '../../src/cli/help.js';
import { captureIo } from '../support/cli.js';

async function out(argv: string[]) {
  const io = captureIo();
  const code = await runCli(argv, io);
  return { code, text: io.stdoutText() };
}

describe('help', () => {
  it('`run --help` and `help run` list --new and every other flag of run', async () => {
    for (const argv of [
      ['run', '--help'],
      ['help', 'run'],
    ]) {
      const r = await out(argv);
      expect(r.code).toBe(0);
      for (const flag of ['--input', '-i', '--dry-run', '--json', '--new', '--config', '--log-level', '--json-logs', '--help'])
        expect(r.text).toContain(flag);
    }
  });

  it('every command: `help CMD` and `CMD --help` list every flag its parser accepts, and the main help lists every command', async () => {
    const main = await out(['--help']);
    for (const cmd of Object.keys(COMMANDS_HELP)) {
      expect(main.text).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
      const a = await out(['help', cmd]);
      const b = await out([cmd, '--help']);
      expect(a.text).toBe(b.text);
      for (const name of Object.keys(optionsOf(cmd))) expect(a.text).toContain(`--${name}`);
      for (const o of allOptions(cmd)) if (o.short) expect(a.text).toContain(`-${o.short}, --${o.name}`);
    }
  });

  it('an unknown command is a usage error with a did-you-mean (exit 2), as is an unknown help topic or runs subcommand', async () => {
    for (const [argv, said] of [
      [['strat'], "msgflow: unknown command 'strat' (did you mean 'start'?)"],
      [['help', 'valdiate'], "msgflow: unknown command 'valdiate' (did you mean 'validate'?)"],
      [['runs', 'shwo', 'x'], "msgflow: unknown runs subcommand 'shwo' (did you mean 'show'?; expected show, cancel, retry or prune)"],
    ] as const) {
      const io = captureIo();
      expect(await runCli([...argv], io)).toBe(2);
      expect(io.stderrText().split('\n')[0]).toBe(said);
    }
  });

  it('every command with subcommands (runs, sessions, pauses, handovers) names an unknown one with a did-you-mean, a missing or unexpected argument (exit 2)', async () => {
    for (const [argv, said] of [
      [['pauses', 'lfit', 'default'], "msgflow: unknown pauses subcommand 'lfit' (did you mean 'lift'?; expected lift)"],
      [['pauses', 'lift'], 'msgflow: pauses lift expects an INSTANCE (its config name or identity)'],
      [
        ['handovers', 'relase', '79001112233'],
        "msgflow: unknown handovers subcommand 'relase' (did you mean 'release'?; expected release)",
      ],
      [['handovers', 'release'], 'msgflow: handovers release expects a CHAT (a chat ID, or a phone number)'],
      [['sessions', 'rest', '79001112233'], "msgflow: unknown sessions subcommand 'rest' (did you mean 'reset'?; expected show or reset)"],
      [['sessions', 'show', '79001112233', 'more'], "msgflow: unexpected argument 'more'"],
      [['runs', 'cancel'], 'msgflow: runs cancel expects a run ID'],
    ] as const) {
      const io = captureIo();
      expect(await runCli([...argv], io), argv.join(' ')).toBe(2);
      expect(io.stderrText().split('\n')[0]).toBe(said);
    }
  });

  it('a flag that is not in the table is a usage error (exit 2)', async () => {
    const io = captureIo();
    expect(await runCli(['validate', '--bogus'], io)).toBe(2);
    expect(io.stderrText()).toContain("Unknown option '--bogus'");
  });
});

describe('docs', () => {
  it('docs/cli.md lists every command of the help table', async () => {
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    for (const cmd of Object.keys(COMMANDS_HELP)) expect(text, cmd).toMatch(new RegExp(`^msgflow ${cmd}\\b`, 'm'));
  });

  it('README and docs/*.md link nothing outside the repository', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const path = await import('node:path');
    const root = path.resolve(import.meta.dirname, '../..');
    const files = [
      'README.md',
      ...readdirSync(path.join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    for (const f of files) {
      const text = readFileSync(path.join(root, f), 'utf8');
      expect(text, f).not.toMatch(/shared\/spec|\/work\//);
      // Relative links resolve inside the repository.
      for (const m of text.matchAll(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g)) {
        const target = path.resolve(path.dirname(path.join(root, f)), m[1]!.split('#')[0]!);
        expect(target.startsWith(root + path.sep), `${f}: ${m[1]}`).toBe(true);
      }
    }
  });
});
