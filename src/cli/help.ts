export const MAIN_HELP = `msgflow: automate a messenger instance with YAML flows

Usage: msgflow <command> [options]

Commands:
  start               Schedule every flow with on.schedule and keep running.
                      Also serves the local service when config.yaml has local:.
  run FLOW            Run one flow now (FLOW: its name or its file).
  runs                List run history; runs show|cancel|retry ID.
  pauses              List instance-wide pauses; pauses lift INSTANCE.
  validate [FILE...]  Check config.yaml and flow files (default: every flow).
  serve               Start the local service over HTTP.
  schema              Print or write the flow JSON Schema (for editors).
  help [COMMAND]      Show help for a command.

Options:
  -c, --config FILE   Config file (default: ./config.yaml)
  -h, --help          Show help
  -v, --version       Show the version

Exit codes: 0 success, 1 failure, 2 usage error.
Docs: README.md`;

export const COMMAND_HELP: Record<string, string> = {
  start: `Usage: msgflow start [--config FILE] [--no-listen]

Runs as a daemon: resumes unfinished runs, catches up missed schedules
(per each flow's on.missed), runs flows with on.startup, then fires each
flow's on.schedule (cron, with its timezone). With a local: section, the local
service listens on local.port so you can call it with curl.
One daemon per store: a second msgflow start on the same store refuses (exit 2)
naming the running one's pid and host. It stays up until stopped, even with
nothing to schedule. SIGTERM, SIGINT or SIGHUP stop it gracefully: running
items finish or are checkpointed, and resume on the next start. A run whose
process crashed 3 times is marked failed instead of resumed again.

Options:
  -c, --config FILE   Config file (default: ./config.yaml)
      --no-listen     Do not open the local service's HTTP port`,
  run: `Usage: msgflow run FLOW [--input key=value ...] [--dry-run] [--new | --resume ID] [--wait] [--json] [--config FILE]

Runs a flow once, now, and waits for it to end. FLOW is a flow's name or its
file. A progress bar shows on a terminal; otherwise one line every few seconds.

An unfinished run of the flow (Ctrl-C, a crash) is resumed from its checkpoint
only when it started with the same inputs and the same flow file; otherwise
the command names it and exits 2: resume it with --resume ID, discard it with
'msgflow runs cancel ID', or start a fresh run beside it with --new. While a
run of the flow is live in another process (on any host), the command says so
and exits 2; --wait waits for it to end instead.

Options:
  -i, --input k=v     Set an input (repeatable); coerced to the input's type.
                      An input the flow does not declare exits 2
      --dry-run       Evaluate and validate every step and item; actions that
                      predict (dryRun: true) are called with a client that
                      refuses writing methods; others are not called
      --new           Start a fresh run even if an unfinished one exists
      --resume ID     Resume this unfinished run of the flow
      --wait          Wait for a live run of the flow to end, then go on
      --json          Print the run record as JSON at the end
  -c, --config FILE   Config file (default: ./config.yaml)

Exit codes: 0 succeeded, 1 failed (any failed item, unless continueOnError),
2 usage error or a run of the flow is live/unfinished, 130 Ctrl-C, 143 SIGTERM.`,
  runs: `Usage: msgflow runs [--flow NAME] [--limit N] [--json] [--config FILE]
       msgflow runs show ID [--json]
       msgflow runs cancel ID
       msgflow runs retry ID [--json]

Lists run history, newest first: id, flow, status, started, duration,
items done/failed. A run whose owner process is gone shows as interrupted;
a waiting run shows its reason and when the wait ends.

  show ID     The run's inputs, each step with status, counts (done, failed,
              invalid, skipped, waiting), output and duration, its failed items
              with their errors, and its log lines.
  cancel ID   A run that is not executing becomes cancelled at once; a running
              one (in any process) stops at its next item boundary, its state
              kept, and ends cancelled.
  retry ID    A new run of a finished run's flow, with its inputs, that redoes
              only its failed items (and failed or unreached steps).

Options:
      --flow NAME     Only runs of this flow (an unknown flow exits 2)
      --limit N       At most N runs (default 20)
      --json          Machine-readable output
  -c, --config FILE   Config file (default: ./config.yaml)`,
  pauses: `Usage: msgflow pauses [--json] [--config FILE]
       msgflow pauses lift INSTANCE

Lists instance-wide pauses (e.g. checkAccount paused by rate_limit_exceeded)
with their reason and end. 'pauses lift INSTANCE' (config name or identity)
lifts them: jobs call the instance again at once.

Options:
      --json          Machine-readable output
  -c, --config FILE   Config file (default: ./config.yaml)`,
  validate: `Usage: msgflow validate [FILE...] [--config FILE]

Checks config.yaml and flow files: every error with file:line:col and key
path (unknown keys, unknown actions, bad cron or timezone, bad durations,
with: blocks that do not fit the action). Default: every file in flowsDir.
Exit code 1 when any file has an error.`,
  schema: `Usage: msgflow schema [--out FILE] [--check] [--config FILE]

Prints the JSON Schema of flow files for this project: the flow shape and the
with: inputs of every action (built-ins, jobs and config.yaml's plugins).
Point your editor at it for autocomplete, e.g. in a flow file:
  # yaml-language-server: $schema=../schema/flow.schema.json

Options:
  -o, --out FILE      Write it to FILE instead of stdout
      --check         With --out: exit 1 when FILE is out of date`,
  serve: `Usage: msgflow serve [--config FILE] [--port N]

Starts msgflow's local implementation of the instance API over HTTP and prints
its base URL. A config.yaml with only a local: section is enough.

Options:
  -p, --port N        Port (default: local.port, 7070); 0 picks a free one
  -c, --config FILE   Config file (default: ./config.yaml)`,
};
