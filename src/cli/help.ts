export const MAIN_HELP = `msgflow: automate a messenger instance with YAML flows

Usage: msgflow <command> [options]

Commands:
  start               Schedule every flow with on.schedule and keep running.
                      Also serves the local service when config.yaml has local:.
  run FLOW            Run one flow now (FLOW: its name or its file).
  runs                List run history.
  validate [FILE...]  Check config.yaml and flow files (default: every flow).
  serve               Start the local service over HTTP.
  schema              Print or write the flow JSON Schema (for editors).
  ui                  Serve the dashboard and HTTP API over the store.
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
SIGTERM or SIGINT stop it gracefully: running items finish or are
checkpointed, and resume on the next start.

Options:
  -c, --config FILE   Config file (default: ./config.yaml)
      --no-listen     Do not open the local service's HTTP port`,
  run: `Usage: msgflow run FLOW [--input key=value ...] [--dry-run] [--config FILE] [--json]

Runs a flow once, now, and waits for it to end. FLOW is a flow's name: or its
file. A progress bar shows on a terminal; otherwise one line every few seconds.

Options:
  -i, --input k=v     Set an input (repeatable); coerced to the input's type
      --dry-run       Evaluate and validate every step and item; call nothing
      --json          Print the run record as JSON at the end
  -c, --config FILE   Config file (default: ./config.yaml)`,
  runs: `Usage: msgflow runs [--flow NAME] [--limit N] [--json] [--config FILE]

Lists run history, newest first: id, flow, status, started, duration,
items done/failed.

Options:
      --flow NAME     Only runs of this flow
      --limit N       At most N runs (default 20)
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
  ui: `Usage: msgflow ui [--port N] [--host H] [--config FILE]

Serves the dashboard and its JSON API (docs/dashboard.md) over this project's
store, without running the scheduler: it shows the runs a daemon or
msgflow run records, live. Run now from the dashboard runs the flow in this
process. Settings come from config.yaml's ui: (port 7071, host 127.0.0.1,
token \${MSGFLOW_UI_TOKEN:-}); a non-loopback host needs a token.

Options:
  -p, --port N        Port (default: ui.port, 7071); 0 picks a free one
      --host H        Address to bind (default: ui.host, 127.0.0.1)
  -c, --config FILE   Config file (default: ./config.yaml)`,
  serve: `Usage: msgflow serve [--config FILE] [--port N]

Starts msgflow's local implementation of the instance API over HTTP and prints
its base URL. A config.yaml with only a local: section is enough.

Options:
  -p, --port N        Port (default: local.port, 7070); 0 picks a free one
  -c, --config FILE   Config file (default: ./config.yaml)`,
};
