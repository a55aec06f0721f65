/**
 * Help of every command, as data: one table row per command and one line
 * per option. `msgflow help CMD`, `CMD --help` and the main help are rendered
 * from it, and {@link optionsOf} turns a command's rows into its parseArgs
 * spec, so a flag cannot be accepted without being listed (adding a flag is
 * one line here).
 */
import type { OptionSpec } from './args.js';

export interface OptionHelp {
  /** Long name without dashes, e.g. `dry-run`. */
  name: string;
  short?: string;
  /** @default boolean */
  type?: 'string' | 'boolean';
  /** Repeatable (`-i a=1 -i b=2`). */
  multiple?: boolean;
  /** What the value is called in the help, e.g. `FILE`. */
  arg?: string;
  text: string;
}

export interface CommandHelp {
  /** Positional part of the usage line, e.g. `FLOW` or `[FILE...]`. */
  args?: string;
  /** One line for the main help's command list. */
  summary: string;
  /** Paragraphs under the usage line. */
  description: string;
  options: OptionHelp[];
  /** Sub-commands, e.g. `runs show ID`: [usage, text]. */
  subcommands?: Array<[string, string]>;
  /** Takes the common output options (--log-level, --json-logs). @default true */
  logOptions?: boolean;
}

const CONFIG: OptionHelp = { name: 'config', short: 'c', type: 'string', arg: 'FILE', text: 'Config file (default: ./config.yaml)' };
const LOG_LEVEL: OptionHelp = {
  name: 'log-level',
  type: 'string',
  arg: 'LEVEL',
  text: 'debug | info | warn | error | silent (default: config.yaml logLevel, else info)',
};
const JSON_LOGS: OptionHelp = { name: 'json-logs', text: 'Log lines as JSON, one object per line (no progress bar)' };
/** How `msgflow run` and `msgflow apply` treat a live run, print the result and pick where the run executes. */
const RUN_FOLLOWING: OptionHelp[] = [
  { name: 'wait', text: 'Wait for a live run of the flow to end, then go on' },
  { name: 'json', text: 'Print the run record as JSON at the end' },
  { name: 'no-daemon', text: 'Execute the run in this process even when msgflow start serves this store' },
];
const HELP: OptionHelp = { name: 'help', short: 'h', text: 'Show this help' };

export const COMMANDS_HELP: Record<string, CommandHelp> = {
  start: {
    summary: 'Schedule every flow with on.schedule and keep running.\nAlso serves the local service when config.yaml has local:.',
    description: `Runs as a daemon: resumes unfinished runs, catches up missed schedules
(per each flow's on.missed), runs flows with on.startup, then fires each
flow's on.schedule (cron, with its timezone). With a local: section, the local
service listens on local.port so you can call it with curl.
One daemon per store: a second msgflow start on the same store refuses (exit 2)
naming the running one's pid and host. It stays up until stopped, even with
nothing to schedule. SIGTERM or SIGINT stop it gracefully: running items
finish or are checkpointed, and resume on the next start; the exit code is 0
after SIGTERM (a supervisor's stop), 130 after Ctrl-C. A run whose process
crashed 3 times is marked failed instead of resumed again.

SIGHUP (and, with --watch, any change of config.yaml or the flows directory)
reloads: added, changed and removed flows and schedules take effect, runs
already started keep their version. A flow file that now fails validation is
reported (file:line:col) and its last good version keeps running; a
config.yaml that fails is reported and the running config stays (a valid one
applies flowsDir; other changed sections need a restart, and say so).`,
    options: [
      { name: 'watch', text: 'Reload when config.yaml or a file under the flows directory changes (as SIGHUP does)' },
      { name: 'no-listen', text: "Do not open the local service's HTTP port" },
      { name: 'no-ui', text: 'Do not serve the dashboard and API (config.yaml ui:, http://127.0.0.1:7071 by default)' },
      {
        name: 'no-work',
        text: 'executor bullmq: schedule and drive runs only; leave forEach items and job steps to msgflow worker processes',
      },
      { name: 'concurrency', type: 'string', arg: 'N', text: 'executor bullmq: items worked at once per instance (default 8)' },
    ],
  },
  worker: {
    summary: 'Work forEach items and job steps from Redis (config.yaml executor: bullmq).',
    description: `Works the forEach items and the steps sent to workers (jobs such as
messages.broadcast, dialog steps with executor: workers) of runs started
anywhere (msgflow run, msgflow start, the dashboard) from the BullMQ queues
on Redis: one queue per instance, limited to the instance's rate. Start as
many as you like, on any machine that reaches the Redis server and has the
project (config.yaml, flows, plugins). A worker killed with kill -9 loses
nothing: its items and steps are taken over once their lock expires
(executor.lockDurationMs). SIGTERM or Ctrl-C stop it gracefully: items in
progress finish first, steps in progress go back to the queue. See
docs/distributed.md.`,
    options: [{ name: 'concurrency', type: 'string', arg: 'N', text: 'Items worked at once per instance (default 8)' }],
  },
  run: {
    args: 'FLOW',
    summary: 'Run one flow now (FLOW: its name or its file).',
    description: `Runs a flow once, now, and waits for it to end. FLOW is a flow's name: or its
file. A progress bar shows on a terminal; otherwise one line every few seconds.

An unfinished run of the flow (Ctrl-C, a crash) is resumed from its checkpoint
only when it started with the same inputs and the same flow file; otherwise
the command names it and exits 2: resume it with --resume ID, discard it with
'msgflow runs cancel ID', or start a fresh run beside it with --new. While a
run of the flow is live in another process (on any host), the command says so
and exits 2; --wait waits for it to end instead.

When msgflow start runs on the same store with its dashboard, the run is
handed to it through the dashboard's API (with ui.token) and executes there,
live in the dashboard; this command follows it and prints the same progress,
summary and exit code. Ctrl-C then stops following, not the run. Without a
dashboard (--no-ui) or with --no-daemon or --resume, the run executes here.

--plan FILE plans a campaign instead (a flow whose step is messages.broadcast
or files.broadcast): a dry run that sends nothing and writes FILE (JSON) with
who gets what, from which instance, with which variant and when (send window,
recipient hours, paces, daily caps, warm-up), each skipped row with its reason,
and the fingerprint of its inputs; it prints the recipients per instance and
variant, the skipped rows and the first and last send. 'msgflow apply FILE'
then sends exactly that plan. --dry-run only checks the flow (no plan).

Exit codes: 0 succeeded, 1 failed (any failed item, unless continueOnError),
2 usage error or a run of the flow is live/unfinished, 130 Ctrl-C, 143 SIGTERM.`,
    options: [
      {
        name: 'input',
        short: 'i',
        type: 'string',
        multiple: true,
        arg: 'k=v',
        text: "Set an input (repeatable); coerced to the input's type; an undeclared input exits 2",
      },
      { name: 'dry-run', text: 'Predict: actions with dryRun: true run with a client that refuses writing methods; others are not called' },
      {
        name: 'plan',
        type: 'string',
        arg: 'FILE',
        text: "Plan the campaign (sends nothing) and write the plan to FILE for 'msgflow apply FILE'",
      },
      { name: 'new', text: 'Start a fresh run even if an unfinished one exists' },
      { name: 'resume', type: 'string', arg: 'ID', text: 'Resume this unfinished run of the flow' },
      ...RUN_FOLLOWING,
    ],
  },
  apply: {
    args: 'FILE',
    summary: "Send exactly the campaign plan FILE written by 'msgflow run FLOW --plan FILE'.",
    description: `Runs the plan's flow with the plan's inputs; its broadcast step sends the
planned recipients only, each from its planned instance with its planned
variant (an instance the health guard pauses meanwhile hands its recipients to
the others, as a run does), with every exactly-once guarantee of a run: killed
and applied again (or resumed by the daemon), nobody is sent twice.

Refused, naming what changed, when an input changed since the plan was made:
the flow file, the recipients' data file, the pool, paces, window or recipient
hours, or the opt-outs among the recipients ('msgflow run FLOW --plan FILE'
makes a new plan). A plan of a step without a campaign name is applied once.
After the run, <report>.plan-diff.csv lists each recipient
whose outcome differs from the plan (not sent, sent from another instance,
sent more than 1 minute later than planned beyond the delay of the whole
apply), and the summary counts them.

Runs in the daemon when msgflow start serves this store (as msgflow run).
Exit codes as msgflow run.`,
    options: [...RUN_FOLLOWING],
  },
  backfill: {
    args: 'FLOW --from T1 --to T2',
    summary: "Run a scheduled flow's slots in a time range, once each.",
    description: `Runs the slots of FLOW's on.schedule (cron, in its time zone) that fall in
[T1, T2], oldest first, each as a run of its own marked trigger backfill, with
the slot it stands for as run.slot. Each slot runs once: a second backfill of
the same range starts nothing new and lists the runs of the first. The runs
respect the flow's concurrency (a writing flow runs one at a time). T1 and T2:
ISO 8601 (2026-01-05, 2026-01-05T09:00:00Z) or ms since the epoch; at most
1000 slots.

When msgflow start serves this store's dashboard, the runs execute in the
daemon and the command returns once they are decided; otherwise they execute
here and the command waits for them. Exit codes: 0 every run succeeded, 1 a
run failed, 2 usage error (no schedule, reversed range, too many slots).`,
    options: [
      { name: 'from', type: 'string', arg: 'T1', text: 'First time of the range (inclusive)' },
      { name: 'to', type: 'string', arg: 'T2', text: 'Last time of the range (inclusive)' },
      { name: 'json', text: 'Print the slots and their runs as JSON' },
      { name: 'no-daemon', text: 'Execute the runs in this process even when msgflow start serves this store' },
    ],
  },
  runs: {
    args: '[show|cancel|retry ID | prune]',
    summary: 'List run history; runs show|cancel|retry ID; runs prune.',
    description: `Lists run history, newest first: id, flow, status, started, duration,
items (done, failed, invalid, duplicate, skipped). A run whose owner process
is gone shows as interrupted; under a waiting run, when the wait ends and why.
'runs prune' deletes the finished runs (succeeded, failed, cancelled) that
ended longer ago than --older-than (or config.yaml's store.retention, which
msgflow start applies every hour), with their items, journals and state;
unfinished runs are never deleted.`,
    subcommands: [
      ['show ID', "The run's inputs, steps (status, counts, output, duration), failed items with errors, log lines"],
      ['cancel ID', 'A run not executing is cancelled at once; a running one stops at its next item boundary'],
      ['retry ID', "A new run of a finished run's flow, with its inputs, redoing only its failed items (a succeeded run: exit 2)"],
      ['prune', 'Delete the finished runs older than --older-than or store.retention (at least 1d); --dry-run counts them'],
    ],
    options: [
      { name: 'flow', type: 'string', arg: 'NAME', text: 'Only runs of this flow (an unknown flow exits 2)' },
      { name: 'limit', type: 'string', arg: 'N', text: 'At most N runs (default 20)' },
      {
        name: 'older-than',
        type: 'string',
        arg: 'AGE',
        text: 'runs prune: runs that finished longer ago than this, e.g. 30d (default store.retention)',
      },
      { name: 'dry-run', text: 'runs prune: count what would be deleted, delete nothing' },
      { name: 'json', text: 'Machine-readable output' },
    ],
  },
  pauses: {
    args: '[lift INSTANCE]',
    summary: 'List instance-wide pauses; pauses lift INSTANCE.',
    description: `Lists instance-wide pauses (e.g. checkAccount paused by rate_limit_exceeded)
with their reason and end. 'pauses lift INSTANCE' (config name or identity)
lifts them: jobs call the instance again at once.`,
    subcommands: [['lift INSTANCE', "Lift the instance's pauses (config name or identity)"]],
    options: [{ name: 'json', text: 'Machine-readable output' }],
  },
  alerts: {
    args: '',
    summary:
      "List alerts: failed runs, steps over their timeout, SLAs missed, schedules missed, pauses, notification lag, campaigns' pauses.",
    description: `Lists every alert's state (raised or resolved), the latest first, with how
often it was raised and its last message. Flows react to alerts with
on: { alert: { kinds: [...] } } and to failed runs with on: { failure: { flows: [...] } }.`,
    options: [
      { name: 'raised', text: 'Only alerts raised now' },
      { name: 'json', text: 'Machine-readable output' },
    ],
  },
  sessions: {
    args: '[show CHAT | reset CHAT]',
    summary: "List dialogs' sessions; sessions show CHAT, sessions reset CHAT.",
    description: `Lists the sessions of the flows with a conversation: block (one per instance,
flow and chat) with their state, status and last activity. 'sessions show CHAT'
prints a chat's sessions in full (vars, states visited, the last lines of the
chat); 'sessions reset CHAT' deletes them, so the chat's next message starts
afresh. CHAT is a chat id (79001234567@c.us) or a phone number.`,
    subcommands: [
      ['show CHAT', "The chat's sessions: state, vars, history, last lines"],
      ['reset CHAT', "Delete the chat's sessions (and their idle timers)"],
    ],
    options: [
      { name: 'flow', type: 'string', arg: 'NAME', text: 'Only sessions of this flow' },
      { name: 'json', text: 'Machine-readable output' },
    ],
  },
  handovers: {
    args: '[release CHAT]',
    summary: 'List chats handed to a human; handovers release CHAT.',
    description: `Lists the chats handed to a human (the operator wrote from the phone, a flow's
chat.handover): the bot starts no run for their messages until the handover ends.
'handovers release CHAT' (a chat ID or a phone number) gives the chat back at once.`,
    subcommands: [['release CHAT', 'Give the chat back to the bot (a chat ID or a phone number)']],
    options: [{ name: 'json', text: 'Machine-readable output' }],
  },
  validate: {
    args: '[FILE...]',
    summary: 'Check config.yaml, flow files and flow tests (default: flowsDir).',
    description: `Checks config.yaml and flow files: every error with file:line:col and key
path (unknown keys with a did-you-mean, unknown actions, bad cron or timezone,
bad durations, with: blocks that do not fit the action, reserved names).
A file named *.test.yaml (or *.test.yml) is checked as a flow test, however it
is named (a directory, its name, a glob such as flows/*.yaml): its format, and
that each case's flow: names a flow of flowsDir.
Default: every file in flowsDir. Exit code 1 when any file has an error.`,
    options: [],
  },
  test: {
    args: '[FILE...]',
    summary: 'Run flow tests (flows/*.test.yaml) on a virtual clock.',
    description: `Runs each case of the test files (default: every *.test.yaml in flowsDir)
against the in-process local service on a virtual clock that jumps ahead
whenever the run only waits: pauses, windows and deadlines take no wall time.
Prints pass/fail per case with a diff of what differed, and "N passed, M
failed" last. Exit code 1 when a case fails. See docs/getting-started.md.`,
    options: [
      { name: 'filter', type: 'string', arg: 'TEXT', text: 'Only cases whose name contains TEXT' },
      { name: 'json', text: 'Machine-readable results' },
    ],
  },
  init: {
    args: '[DIR]',
    summary: 'Create a new msgflow project in DIR (default: .).',
    description: `Writes package.json ("type": "module", msgflow as a dependency), config.yaml
with the embedded local service, one flow and its test, a TypeScript plugin
and a README. The result passes msgflow validate and msgflow test at once.
Existing files are never overwritten.`,
    options: [],
  },
  serve: {
    summary: 'Start the local service over HTTP.',
    description: `Starts msgflow's local implementation of the instance API over HTTP and prints
its base URL and the local instances' ids, with a curl line per instance
ending in <API_TOKEN> and where that token is in config.yaml (tokens are never
printed). A config.yaml with only a local: section is enough. SIGTERM stops it
(exit 0), Ctrl-C too (exit 130).`,
    options: [{ name: 'port', short: 'p', type: 'string', arg: 'N', text: 'Port (default: local.port, 7070); 0 picks a free one' }],
  },
  schema: {
    summary: 'Print or write the flow JSON Schema (for editors).',
    description: `Prints the JSON Schema of flow files for this project: the flow shape and the
with: inputs of every action (built-ins, jobs and config.yaml's plugins).
Point your editor at it for autocomplete, e.g. in a flow file:
  # yaml-language-server: $schema=../schema/flow.schema.json`,
    options: [
      { name: 'out', short: 'o', type: 'string', arg: 'FILE', text: 'Write it to FILE instead of stdout' },
      { name: 'check', text: 'With --out: exit 1 when FILE is out of date (without --out: usage error)' },
    ],
  },
  ui: {
    summary: 'Serve the dashboard and HTTP API over the store.',
    description: `Serves the dashboard and its JSON API (docs/dashboard.md) over this project's
store, without running the scheduler: it shows the runs a daemon or
msgflow run records, live. Run now from the dashboard runs the flow in this
process. Settings come from config.yaml's ui: (port 7071, host 127.0.0.1,
token \${MSGFLOW_UI_TOKEN:-}); a non-loopback host needs a token.`,
    options: [
      { name: 'port', short: 'p', type: 'string', arg: 'N', text: 'Port (default: ui.port, 7071); 0 picks a free one' },
      { name: 'host', type: 'string', arg: 'H', text: 'Address to bind (default: ui.host, 127.0.0.1)' },
    ],
  },
};

/** Every option of a command: its own, then --config, the output options and --help. */
export function allOptions(command: string): OptionHelp[] {
  const h = COMMANDS_HELP[command];
  if (!h) return [];
  return [...h.options, CONFIG, ...(h.logOptions === false ? [] : [LOG_LEVEL, JSON_LOGS]), HELP];
}

/**
 * The parseArgs spec of a command, from its help rows (`--help` itself is
 * answered by main.ts before the command runs).
 */
export function optionsOf(command: string): OptionSpec {
  const spec: OptionSpec = {};
  for (const o of allOptions(command)) {
    if (o.name === 'help') continue;
    spec[o.name] = { type: o.type ?? 'boolean', ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  }
  return spec;
}

function flagText(o: OptionHelp): string {
  const long = `--${o.name}${o.arg ? ` ${o.arg}` : ''}`;
  return o.short ? `-${o.short}, ${long}` : `    ${long}`;
}

/** `Usage: msgflow run FLOW [options]`, the description, sub-commands and every option. */
export function commandHelp(command: string): string | undefined {
  const h = COMMANDS_HELP[command];
  if (!h) return undefined;
  const opts = allOptions(command);
  const width = Math.max(...opts.map((o) => flagText(o).length)) + 2;
  const lines = [`Usage: msgflow ${command}${h.args ? ` ${h.args}` : ''} [options]`, '', h.description];
  if (h.subcommands?.length) {
    const w = Math.max(...h.subcommands.map(([u]) => u.length)) + 2;
    lines.push('', 'Commands:', ...h.subcommands.map(([u, t]) => `  ${u.padEnd(w)}${t}`));
  }
  lines.push('', 'Options:');
  for (const o of opts) lines.push(`  ${flagText(o).padEnd(width)}${o.text}`);
  return lines.join('\n');
}

/** The main help: every command with its summary. */
export function mainHelp(): string {
  const rows = Object.entries(COMMANDS_HELP).map(([name, h]) => [`${name}${h.args ? ` ${h.args}` : ''}`, h.summary] as const);
  rows.push(['help [COMMAND]', 'Show help for a command.']);
  const w = Math.max(...rows.map(([u]) => u.length)) + 2;
  const list = rows.flatMap(([u, s]) => s.split('\n').map((line, i) => `  ${(i === 0 ? u : '').padEnd(w)}${line}`));
  return `msgflow: automate a messenger instance with YAML flows

Usage: msgflow <command> [options]

Commands:
${list.join('\n')}

Options:
  -c, --config FILE   Config file (default: ./config.yaml)
      --log-level L   debug | info | warn | error | silent
      --json-logs     Log lines as JSON, one object per line
  -h, --help          Show help
  -v, --version       Show the version

Exit codes: 0 success, 1 failure, 2 usage error, 130 Ctrl-C.
Docs: README.md and docs/*.md (docs/cli.md: every command)`;
}
