/**
 * The action contract: what a built-in action or a plugin provides, and what
 * the engine hands it when it runs. An action is a description (name, input
 * schema, output description) plus a `run` function; the input schema feeds
 * `with:` validation, the docs and the published JSON Schema.
 */
import type { Pool } from '../util/pool.js';
import { z } from 'zod';
import type { InstanceApi } from '../api/types.js';
import type { Clock } from '../util/clock.js';

import type { DurableState, RunPlan } from '../store/types.js';
import type { Logger } from '../util/logger.js';
import type { TemplateTable } from './expr/template.js';
import type { PauseRule } from './run/pauses.js';
import type { SharedNamespace } from './shared.js';

// Re-exported: plugin authors name them through the action contract.
export type { DurableState, Logger };

export interface WaitOptions {
  /** Absolute wake time, ms since the epoch. One of `until` / `ms`. */
  until?: number;
  /** Relative wait, ms (turned into an absolute wake time when first persisted). */
  ms?: number;
  /** Why: shown by `msgflow runs` and in the `run:waiting` event. */
  reason: string;
  /**
   * Identifies the wait within this step/item so that, when the run resumes
   * after a restart, the same wait finds its persisted wake time instead of
   * starting over. @default "wait"
   */
  key?: string;
  /**
   * For a wait on a record other processes may change (an instance-wide
   * pause that `msgflow pauses lift` or the dashboard lifts, from any process
   * or host sharing the store): asked every second or so while the wait
   * sleeps, it ends the wait at once, as if its time had come, when it
   * answers true. Read the store, never a variable of this process. A throw
   * counts as false (asked again next time).
   * @example lifted: async () => (await pauses.get<Pause>(key))?.until !== until
   */
  lifted?: () => boolean | Promise<boolean>;
  /**
   * Asks `lifted` every this many ms of the run's clock instead of every
   * second of real time: for a record written by something that runs on the
   * same clock, such as a reply the notification consumer records (under
   * `msgflow test` a virtual clock would otherwise jump past the reply to the
   * wait's end). @default undefined (real time, every second)
   */
  liftedEvery?: number;
}

/** A run's campaign plan (RunRecord.plan) as its actions see it: with the hash of the run's flow file (its fingerprint's `flow`). */
export interface ActionRunPlan extends RunPlan {
  flowHash: string;
}

export interface ActionRunInfo {
  /** Run id (stable across restarts). */
  id: string;
  flow: string;
  step: string;
  /** 1-based attempt of this step (or item). Rate-limit waits do not count. */
  attempt: number;
  /** The current forEach item, when the step has `forEach`. */
  item?: { index: number; value: unknown };
  dryRun: boolean;
  /** The campaign plan this run writes (`msgflow run --plan`, a dry run) or applies (`msgflow apply`). @default none */
  plan?: ActionRunPlan;
  /** The flow's resolved inputs. */
  inputs: Readonly<Record<string, unknown>>;
  /** The notification that started the run (`event` in its expressions), when one did. */
  event?: Readonly<Record<string, unknown>>;
  /**
   * The step's templates as loaded, each carrying its flow position: an
   * action evaluating a `rawInputs` value itself passes them to
   * evaluateTemplate so that an error names where the value is written.
   */
  templates?: TemplateTable;
}

export interface ActionContext {
  /** The flow's instance (HTTP client or in-process local service). */
  client: InstanceApi;
  /** The config name of the instance, e.g. `default`: for messages, never for keys. */
  instanceName: string;
  /**
   * The instance's identity: a short hash of apiUrl + idInstance (the local
   * service's own identity for `apiUrl: local`). Key every cache, pause,
   * contact record and trend by it, so that pointing `default` at another
   * instance never mixes their data. Safe to print: it reveals neither the
   * instance id nor the token.
   */
  instance: InstanceRef;
  logger: Logger;
  run: ActionRunInfo;
  /** Aborted when the run is cancelled or the daemon shuts down: stop at a safe point. */
  signal: AbortSignal;
  clock: Clock;
  /** Durable state of this step (and item) within this run: survives kill -9. */
  state: DurableState;
  /**
   * Durable state shared across runs and flows: one of msgflow's namespaces
   * (engine/shared.ts declares them, e.g. OPT_OUT_NS) or a plugin's own,
   * named by a string (e.g. `myPlugin:${ctx.instance.identity}`).
   */
  shared(namespace: string | SharedNamespace<unknown>): DurableState;
  /**
   * Pauses durably until a time: the wake time is persisted before sleeping,
   * the run shows as waiting, and after a restart the run resumes and the same
   * wait (same key) sleeps only what is left.
   */
  wait(options: WaitOptions): Promise<void>;
  /**
   * Reports progress of a long action: the step's counters, shared by the
   * bar, the log lines, `msgflow runs`, the job summary and the exit code.
   */
  progress(update: ProgressCounts): void;
  /**
   * The step's append-only journal (per run, step and item): one entry per
   * finished record, durable when the promise resolves, replayed in order on
   * resume. Costs do not grow with what is already stored.
   */
  journal: RunJournal;
  /** Emits a custom event on the engine's bus (`action:event`). */
  emit(name: string, payload?: Record<string, unknown>): void;
  /** Resolves a path relative to the project (config file's directory). */
  resolvePath(p: string): string;
  /**
   * Evaluates the `${{ }}` templates in a value (a string, or the strings
   * inside arrays and objects) against the run's expression scope (inputs,
   * env, steps, run, event, and the forEach item), with `extra` taking the
   * place of `item` and `index`: what an action that evaluates a `rawInputs`
   * field once per record (files.broadcast's caption) calls.
   *
   * @example ctx.render('Hello ${{ item.firstName }}', { item: row, index: 3 }) // 'Hello Alice'
   */
  render(value: unknown, extra?: RenderExtra): unknown;
  /**
   * Another instance of config.yaml by its name (a broadcast's pool): its
   * client, under the run's chain like `client` (dry run, ownership,
   * pauses), and its ref (key its data by `instance.identity`). Absent where
   * the run reaches only its flow's instance (e.g. a plugin's test context
   * without `instances`).
   * @throws when config.yaml has no instance of that name
   */
  instanceClient?(name: string): { client: InstanceApi; instance: InstanceRef };
  /**
   * Takes the named claim for this run: one run at a time holds it, across
   * processes and hosts sharing the store (a store lease renewed with the
   * run's own, taken over once its holder died; every writing call of the run
   * first checks it still holds it). Answers who holds it when another live
   * run does. Held until {@link release} or the end of the run. Absent where
   * the run has no owner (a test context without one).
   * @example if (!(await ctx.claim?.('campaign:spring'))?.ok) ... // another run sends it
   */
  claim?(name: string): Promise<{ ok: true } | { ok: false; holder: string }>;
  /** Gives a claim back (ActionContext.claim). */
  release?(name: string): Promise<void>;
  /**
   * config.yaml's named pools of instances (`pools:`), for a broadcast's
   * `pool: <name>`. Absent where the run has none (a test context without them).
   */
  pools?: Readonly<Record<string, Pool>>;
}

/** A name of config.yaml in a step's `with:` (ActionDefinition.configNames). */
export interface ConfigNameRef {
  /** Where, under `with:`. */
  path: (string | number)[];
  kind: 'instance' | 'pool';
  name: string;
}

/** What ctx.render adds to the run's scope: a record's `item` and `index`, or a conversation's `session`, `message` and `value`. */
export interface RenderExtra {
  item?: unknown;
  index?: number;
  row?: unknown;
  session?: unknown;
  message?: unknown;
  value?: unknown;
}

/** Which instance a step talks to. */
export interface InstanceRef {
  /** Config name, e.g. `default`. */
  name: string;
  /** Stable identity, e.g. `inst-3f9a1c02b7e4` (see {@link ActionContext.instance}). */
  identity: string;
}

/**
 * A step's counters. `done` counts successes only; `failed` items whose
 * outcome is a failure; `invalid` input records rejected before any call;
 * `duplicate` input records that repeat an earlier one (the first wins);
 * `skipped` records not attempted by design (`if:` false, opted out, dry-run
 * predictions); `waiting` records held by a durable wait right now. Every
 * record of `total` ends in exactly one of done, failed, invalid, duplicate
 * and skipped, so a finished step's counters add up to its total.
 */
export interface ProgressCounts {
  done: number;
  total?: number;
  failed?: number;
  invalid?: number;
  duplicate?: number;
  skipped?: number;
  waiting?: number;
}

/** An append-only log of JSON entries, scoped to one step (and item) of one run. */
export interface RunJournal {
  /** Appends entries; resolves once they survive kill -9. Concurrent calls keep their order. */
  append(...entries: unknown[]): Promise<void>;
  /** Every entry appended so far, oldest first, streamed (never loaded whole). */
  replay<T = unknown>(): AsyncIterable<T>;
}

export interface ActionDefinition<S extends z.ZodType = z.ZodType, O = unknown> {
  /** Name used in `uses:`, e.g. `checkAccount.bulk`. */
  name: string;
  description: string;
  /** Schema of `with:`; its JSON Schema is published in schema/flow.schema.json. */
  input: S;
  /** What `run` returns, in words: shown by `msgflow actions` and in the flow JSON Schema. */
  output: {
    description: string;
  };
  /**
   * Top-level `with:` keys the engine passes to the action as written, their
   * `${{ }}` templates NOT evaluated, because the action evaluates them itself
   * once per record (e.g. `files.broadcast`'s `caption: "Hello ${{ item.firstName }}"`,
   * where `item` is each recipient, not a forEach item). The loader still
   * parses them to report syntax errors. @default []
   */
  rawInputs?: readonly string[];
  /**
   * A rule across several `with:` keys that the input schema's fields cannot
   * express, checked when the flow is loaded (`msgflow validate`). It gets the
   * `with:` block as written (values may be `${{ }}` templates) and returns
   * the reason when the rule is broken.
   * @example checkWith: (w) => (w.a !== undefined && w.b !== undefined ? 'give a or b, not both' : undefined)
   */
  checkWith?(withBlock: Readonly<Record<string, unknown>>): string | undefined;
  /**
   * The names of config.yaml that the `with:` block as written refers to (an
   * instance, a pool), each with its path under `with:`: the loader checks
   * each against config.yaml (`msgflow validate`: unknown, with a did-you-mean,
   * at its file:line:col). Templates are skipped. @default none
   * @example configNames: (w) => (typeof w.pool === 'string' ? [{ path: ['pool'], kind: 'pool', name: w.pool }] : [])
   */
  configNames?(withBlock: Readonly<Record<string, unknown>>): ConfigNameRef[];
  /**
   * Whether the action takes part in `msgflow run --dry-run`: when true it is
   * called with `ctx.run.dryRun` set, must make no writing call (the engine's
   * client refuses them: METHOD_SPECS[m].writes) and returns its prediction
   * (e.g. `wouldCheck`, `wouldAdd`, `wouldSend`) in the output's usual shape, so
   * later steps read it as they would a real result. When false the action is
   * not called in a dry run and its output is `{ dryRun: true, input }`.
   * @default false
   */
  dryRun?: boolean;
  /**
   * Whether the action counts its own records through `ctx.progress` (a job
   * such as checkAccount.bulk, which works through the rows of a file): its
   * step's start line and `step:started` event then wait for its first count,
   * which carries the number of records (`total`), instead of calling the
   * step 1 item, and its counters are the step's and the run's. Report a
   * first count (with `total`) before the first slow call. @default false
   */
  countsRecords?: boolean;
  /**
   * Whether the action is a unit of work on an instance that may run on a
   * BullMQ worker (a job: it resumes from its own durable records, so a
   * worker that dies mid-step is taken over by another): with the bullmq
   * executor its single steps go to the instance's queue, worked by
   * `msgflow worker` processes, unless the step says `executor: local`
   * (engine/run/executor.ts placement). @default false (the step runs in the
   * process that drives the run unless it says `executor: workers`)
   */
  runsOnWorkers?: boolean;
  /**
   * Whether the action changes something outside msgflow (sends, adds or
   * edits contacts). A flow with a writing step runs at most once at a time
   * unless its `concurrency.max` says otherwise. API methods are known from
   * METHOD_SPECS[m].writes. @default false
   */
  writes?: boolean;
  /**
   * Whether a run started at `now` would first wait before this step does its
   * work (a send window that is closed), from the `with:` block as written:
   * the dashboard's Run now says so before it starts the run. `until` is when
   * the wait ends; without it the step will not do its work at all (a window
   * over for good). A value only the run can know (a `${{ }}` template)
   * answers undefined, as does a step that would not wait.
   * @default undefined (never waits before its work)
   */
  firstWait?(withBlock: Readonly<Record<string, unknown>>, now: number, zone: string): StartWait | undefined;
  /**
   * Instance-wide pauses the action declares (engine/run/pauses.ts): after a
   * failure a rule names, every call of its method on the instance waits,
   * from every run, flow, process and host, and the action's own calls meet
   * a PauseError (engine/control.ts) while it is in force.
   * @default []
   */
  pauses?: readonly PauseRule<z.output<S>>[];
  run(ctx: ActionContext, input: z.output<S>): Promise<O>;
}

/** What a file field of an action's `with:` accepts (see {@link inputFile}, {@link outputFile}). */
export interface FileFieldMeta {
  /** `read`: the action reads the file, so it must exist; `write`: the action writes it. */
  access: 'read' | 'write';
  /** Extensions the action handles, lower case with the dot (`.csv`); any when absent. */
  extensions?: readonly string[];
}

/** The fields of action input schemas that name a file the action reads or writes. */
// cache: zod's registry is keyed weakly by the schema object itself, so an entry is that field's own declaration and goes with it
export const FILE_FIELDS = z.registry<FileFieldMeta>();

/**
 * Declares a `with:` field as a file the action reads, relative to the
 * project (what `ctx.resolvePath` resolves): `msgflow validate` then checks
 * that a literal path there exists, is a file and has one of `extensions`,
 * and names its position. A path with `${{ }}` is only known at run time.
 *
 * @example input: z.strictObject({ sheet: inputFile(z.string(), { extensions: ['.csv'] }) })
 */
export function inputFile<S extends z.ZodType>(schema: S, opts: { extensions?: readonly string[] } = {}): S {
  FILE_FIELDS.add(schema, { access: 'read', ...opts });
  return schema;
}

/**
 * Declares a `with:` field as a file the action writes (a report): `msgflow
 * validate` checks that a literal path has one of `extensions` and is not a folder.
 *
 * @example input: z.strictObject({ report: outputFile(z.string().optional(), { extensions: ['.csv', '.json'] }) })
 */
export function outputFile<S extends z.ZodType>(schema: S, opts: { extensions?: readonly string[] } = {}): S {
  FILE_FIELDS.add(schema, { access: 'write', ...opts });
  return schema;
}

/** What a step would wait for when its run starts now (ActionDefinition.firstWait). */
export interface StartWait {
  /** When the wait ends, ms since the epoch; absent: the step will not do its work (e.g. a send window over for good). */
  until?: number;
  /** Why, in words, e.g. `send window opens at 09:00 (Europe/Berlin)`. */
  reason: string;
}

/** Identity helper that infers the input type from the schema. */
export function defineAction<S extends z.ZodType, O>(def: ActionDefinition<S, O>): ActionDefinition<S, O> {
  return def;
}

/** What a plugin module exports (default export or named `actions`). */
export interface PluginModule {
  name?: string;
  actions: ActionDefinition<any, any>[];
}

export function definePlugin(plugin: PluginModule): PluginModule {
  return plugin;
}
