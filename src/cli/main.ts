/**
 * `msgflow` command line. Each command lives in commands/; this file only
 * dispatches and turns errors into messages and exit codes.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { portInUseError, MsgflowError, didYouMean } from '../runtime/present.js';
import { EXIT, UsageError } from './exit-codes.js';
import { commandHelp, mainHelp } from './help.js';
import { formatCliError, processIo, type Io } from './output.js';

type Command = (argv: string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./commands/serve.js')).serve,
  validate: async () => (await import('./commands/validate.js')).validate,
  run: async () => (await import('./commands/run.js')).run,
  apply: async () => (await import('./commands/apply.js')).apply,
  runs: async () => (await import('./commands/runs.js')).runs,
  backfill: async () => (await import('./commands/backfill.js')).backfill,
  pauses: async () => (await import('./commands/pauses.js')).pauses,
  alerts: async () => (await import('./commands/alerts.js')).alerts,
  sessions: async () => (await import('./commands/sessions.js')).sessions,
  handovers: async () => (await import('./commands/handovers.js')).handovers,
  start: async () => (await import('./commands/start.js')).start,
  worker: async () => (await import('./commands/worker.js')).worker,
  schema: async () => (await import('./commands/schema.js')).schema,
  ui: async () => (await import('./commands/ui.js')).ui,
  test: async () => (await import('./commands/test.js')).test,
  init: async () => (await import('./commands/init.js')).init,
};

export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Runs the CLI and resolves to the exit code. */
export async function runCli(argv: string[], io: Io = processIo()): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help') {
    io.out(mainHelp());
    return first === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (first === '-v' || first === '--version') {
    io.out(version());
    return EXIT.OK;
  }
  if (first === 'help') {
    const topic = rest[0];
    const text = topic === undefined ? mainHelp() : commandHelp(topic);
    if (text === undefined) return usage(io, unknownCommand(topic));
    io.out(text);
    return EXIT.OK;
  }
  const load = COMMANDS[first];
  if (!load) return usage(io, unknownCommand(first));
  if (rest.includes('-h') || rest.includes('--help')) {
    io.out(commandHelp(first) ?? mainHelp());
    return EXIT.OK;
  }
  try {
    const command = await load();
    return await command(rest, io);
  } catch (e) {
    if (e instanceof UsageError) return usage(io, e.message, first);
    // A wrong `-i key=value` is a command-line mistake like a wrong flag: exit 2.
    if (e instanceof MsgflowError && e.code === 'INPUT_ARG_INVALID') return usage(io, `${e.message} [${e.code}]`, first);
    // So is a backfill range the flow's schedule cannot serve (no schedule, reversed, too many slots).
    if (e instanceof MsgflowError && e.code === 'BACKFILL_INVALID') return usage(io, `${e.message} [${e.code}]`, first);
    // A busy port from any command that listens: one line naming the port and its setting.
    io.err(formatCliError(portInUseError(e, { key: first === 'serve' ? 'local.port in config.yaml (or --port)' : undefined }) ?? e));
    if ((io.env ?? process.env).MSGFLOW_DEBUG && e instanceof Error && e.stack) io.err(e.stack);
    return EXIT.FAILURE;
  }
}

/** `unknown command 'strat' (did you mean 'start'?)`. */
function unknownCommand(name: string): string {
  return `unknown command '${name}'${didYouMean(name, [...Object.keys(COMMANDS), 'help'])}`;
}

function usage(io: Io, message: string, command?: string): number {
  io.err(`msgflow: ${message}`);
  io.err(`Run 'msgflow ${command ? `${command} --help` : '--help'}' for usage.`);
  return EXIT.USAGE;
}

// Run when executed directly (`node --import tsx src/cli/main.ts ...` in tests).
const self = fileURLToPath(import.meta.url);
const invoked = process.argv[1] ? safeRealpath(process.argv[1]) : '';
if (invoked === self) {
  runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
