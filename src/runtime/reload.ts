/**
 * Reloading a running daemon's config.yaml and flows (`msgflow start
 * --watch`, SIGHUP). The rule is "the last good version runs": a config.yaml
 * that fails validation is reported and the running config stays; a flow file
 * that now fails is reported (file:line:col) and its previous definition stays
 * scheduled. Runs already started keep the definition they started with (the
 * engine holds its own copy), so nothing in flight is disturbed.
 */
import { existsSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { FlowError } from '../api/errors.js';
import { loadConfig, type Config, type LoadConfigOptions } from '../config/load.js';
import { loadFlows } from '../engine/flow/load.js';
import { FlowFileError } from '../engine/flow/errors.js';
import type { Flow } from '../engine/flow/types.js';
import type { FireFn, Scheduler } from '../engine/schedule/types.js';
import { flowSource } from './project-engine.js';
import type { Runtime } from './runtime.js';

/** What one reload did. */
export interface ReloadSummary {
  /** Flows whose definition changed, with what changed (e.g. `schedule 0 9 * * * → 0 10 * * *`). */
  changed: Array<{ flow: string; what: string }>;
  added: string[];
  removed: string[];
  /** Flow files that fail validation: each message has file:line:col; `kept` names the flow whose last good version stays. */
  invalid: Array<{ message: string; kept?: string }>;
  /** Why config.yaml was not taken (the running config stays), when it failed validation. */
  configError?: string;
  /** Sections of config.yaml that changed but only take effect on a restart (store, local, instances, plugins...). */
  configNeedsRestart: string[];
}

export interface ReloaderOptions {
  runtime: Pick<Runtime, 'config' | 'registry'>;
  scheduler: Scheduler;
  /** The config file the daemon started from. */
  configPath: string;
  /** How it was loaded (environment, working directory). @default process.env and cwd */
  configOptions?: LoadConfigOptions;
  /** The flows loaded at start (the valid ones). */
  flows: Flow[];
  /** The fire function of a scheduled flow (how the daemon starts its runs). */
  fireFor(flow: Flow): FireFn;
}

const schedulable = (f: Flow | undefined): f is Flow => f !== undefined && (f.on.schedule !== undefined || f.on.startup);

/** Config sections a running daemon applies on reload; the others need a restart. */
const LIVE_CONFIG_KEYS = new Set(['flowsDir', 'file', 'baseDir']);

/**
 * Holds the daemon's current flows and applies reloads to its scheduler. Reloads
 * are serialised: a SIGHUP during a reload runs one more reload after it.
 */
export class Reloader {
  private flows = new Map<string, Flow>();
  private config: Config;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: ReloaderOptions) {
    this.config = opts.runtime.config;
    for (const f of opts.flows) this.flows.set(f.name, f);
  }

  /** The flows loaded now (after the last reload). */
  current(): Flow[] {
    return [...this.flows.values()];
  }

  /** Re-reads config.yaml and the flows directory and applies what changed. */
  reload(): Promise<ReloadSummary> {
    const next = this.chain.then(() => this.reloadNow());
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async reloadNow(): Promise<ReloadSummary> {
    const summary: ReloadSummary = { changed: [], added: [], removed: [], invalid: [], configNeedsRestart: [] };
    this.reloadConfig(summary);
    const source = flowSource(this.config, this.opts.runtime.registry);
    const { flows, errors } = loadFlows(source.dir, source.options);
    const next = new Map<string, Flow>(flows.map((f) => [f.name, f]));
    for (const e of errors) {
      const kept = this.lastGoodFor(e, next);
      if (kept) next.set(kept.name, kept);
      summary.invalid.push({ message: e.message, kept: kept?.name });
    }
    for (const [name, flow] of next) {
      const old = this.flows.get(name);
      if (!old) summary.added.push(name);
      else {
        const what = describeChange(old, flow);
        // An unchanged flow keeps its object: the scheduler is left alone.
        if (what) summary.changed.push({ flow: name, what });
        else next.set(name, old);
      }
    }
    for (const name of this.flows.keys()) if (!next.has(name)) summary.removed.push(name);
    await this.applyToScheduler(next);
    this.flows = next;
    return summary;
  }

  /** Takes config.yaml when it validates: flowsDir applies now, other changed sections are reported. */
  private reloadConfig(summary: ReloadSummary): void {
    let fresh: Config;
    try {
      fresh = loadConfig(this.opts.configPath, this.opts.configOptions);
    } catch (e) {
      summary.configError = e instanceof Error ? e.message : String(e);
      return;
    }
    const keys = new Set([...Object.keys(fresh), ...Object.keys(this.config)]);
    summary.configNeedsRestart = [...keys].filter(
      (k) =>
        !LIVE_CONFIG_KEYS.has(k) &&
        JSON.stringify((fresh as unknown as Record<string, unknown>)[k]) !==
          JSON.stringify((this.config as unknown as Record<string, unknown>)[k]),
    );
    // Flows are checked against the instances the running clients serve: only flowsDir moves now.
    this.config = { ...this.config, flowsDir: fresh.flowsDir };
  }

  /** The running version of the flow whose file (or name) now fails validation. */
  private lastGoodFor(e: FlowError, next: Map<string, Flow>): Flow | undefined {
    if (!(e instanceof FlowFileError)) return undefined;
    const byFile = [...this.flows.values()].find((f) => f.displayFile === e.file);
    const old = byFile ?? (e.flowName ? this.flows.get(e.flowName) : undefined);
    return old && !next.has(old.name) ? old : undefined;
  }

  private async applyToScheduler(next: Map<string, Flow>): Promise<void> {
    const { scheduler, fireFor } = this.opts;
    for (const [name, old] of this.flows) {
      const flow = next.get(name);
      if (schedulable(old) && !schedulable(flow)) await scheduler.remove(name);
    }
    for (const [name, flow] of next) {
      const old = this.flows.get(name);
      if (old === flow || !schedulable(flow)) continue;
      if (schedulable(old)) scheduler.replace(flow, fireFor(flow));
      else scheduler.add(flow, fireFor(flow));
    }
  }
}

/** What differs between two versions of a flow, for the reload line; '' when nothing does. */
export function describeChange(old: Flow, flow: Flow): string {
  const parts: string[] = [];
  const sched = (f: Flow) =>
    f.on.schedule ? `${f.on.schedule.cron}${f.on.schedule.timezone ? ` ${f.on.schedule.timezone}` : ''}` : 'none';
  if (sched(old) !== sched(flow)) parts.push(`schedule ${sched(old)} → ${sched(flow)}`);
  const { schedule: _a, ...oldOn } = old.on;
  const { schedule: _b, ...newOn } = flow.on;
  if (JSON.stringify(oldOn) !== JSON.stringify(newOn)) parts.push('triggers');
  if (JSON.stringify(old.steps) !== JSON.stringify(flow.steps)) parts.push('steps');
  if (JSON.stringify(old.inputs) !== JSON.stringify(flow.inputs)) parts.push('inputs');
  const rest = (f: Flow) => JSON.stringify({ ...f, on: undefined, steps: undefined, inputs: undefined });
  if (parts.length === 0 && rest(old) !== rest(flow)) parts.push('definition');
  return parts.join(', ');
}

/** The reload's log lines: problems first (each on its own line), then the one-line summary. */
export function formatReload(s: ReloadSummary): { errors: string[]; line: string } {
  const errors: string[] = [];
  if (s.configError) errors.push(`reload: config.yaml not taken, the running config stays:\n${s.configError}`);
  if (s.configNeedsRestart.length > 0)
    errors.push(`reload: config.yaml ${s.configNeedsRestart.join(', ')} changed: restart msgflow start to apply`);
  for (const i of s.invalid) errors.push(`reload: ${i.message}${i.kept ? `\nreload: flow '${i.kept}' keeps its last good version` : ''}`);
  const n = s.changed.length;
  const changed = `${n} flow${n === 1 ? '' : 's'} changed${n > 0 ? ` (${s.changed.map((c) => `${c.flow}: ${c.what}`).join('; ')})` : ''}`;
  const names = (l: string[]) => (l.length > 0 ? ` (${l.join(', ')})` : '');
  const invalid = s.invalid.length > 0 ? `, ${s.invalid.length} invalid` : '';
  return {
    errors,
    line: `reloaded: ${changed}, ${s.added.length} added${names(s.added)}, ${s.removed.length} removed${names(s.removed)}${invalid}`,
  };
}

/**
 * Calls `onChange` (debounced) when config.yaml or a flow file (`*.yaml`,
 * `*.yml`, not `*.test.yaml`) in the flows directory changes. Watches directories, not files: editors save by writing
 * a new file and renaming it over the old one, which a file watch loses.
 */
export function watchProject(configPath: string, flowsDir: string, onChange: () => void, debounceMs = 300): { close(): void } {
  const configFile = path.resolve(configPath);
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  };
  const watchers: FSWatcher[] = [
    watch(path.dirname(configFile), (_event, name) => {
      if (name === path.basename(configFile)) changed();
    }),
  ];
  // Flows are the directory's own files (listFlowFiles does not descend). Not recursive: Node 20's
  // recursive watch on Linux loses files replaced by rename (sed -i, most editors' saves).
  // A flows directory created later is picked up by the next start; config.yaml is still watched.
  if (existsSync(flowsDir)) {
    watchers.push(
      watch(flowsDir, (_event, name) => {
        if (!name || (/\.ya?ml$/i.test(name) && !/\.test\.ya?ml$/i.test(name))) changed();
      }),
    );
  }
  // A watcher error (the directory removed) must not crash the daemon: the flows keep running.
  for (const w of watchers) w.on('error', () => w.close());
  return {
    close() {
      clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
