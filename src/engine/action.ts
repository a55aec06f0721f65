/**
 * The action contract: what a built-in action or a plugin provides, and what
 * the engine hands it when it runs. An action is a description (name, input
 * schema, output description) plus a `run` function; the input schema feeds
 * `with:` validation, the docs and the published JSON Schema.
 */
import type { z } from 'zod';
import type { InstanceApi } from '../api/types.js';
import type { Clock } from '../util/clock.js';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Durable key/value storage; values must be JSON-serialisable. */
export interface DurableState {
  get<T = unknown>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key with this prefix, with its value. */
  entries<T = unknown>(prefix?: string): Promise<Array<[string, T]>>;
}

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
  /** The flow's resolved inputs. */
  inputs: Readonly<Record<string, unknown>>;
}

export interface ActionContext {
  /** The flow's instance (HTTP client or in-process local service). */
  client: InstanceApi;
  /** The config name of the instance, e.g. `default`. Scope for per-instance state. */
  instanceName: string;
  logger: Logger;
  run: ActionRunInfo;
  /** Aborted when the run is cancelled or the daemon shuts down: stop at a safe point. */
  signal: AbortSignal;
  clock: Clock;
  /** Durable state of this step (and item) within this run: survives kill -9. */
  state: DurableState;
  /** Durable state shared across runs and flows, namespaced by the caller (e.g. `checkAccount:default`). */
  shared(namespace: string): DurableState;
  /**
   * Pauses durably until a time: the wake time is persisted before sleeping,
   * the run shows as waiting, and after a restart the run resumes and the same
   * wait (same key) sleeps only what is left.
   */
  wait(options: WaitOptions): Promise<void>;
  /** Reports progress of a long action (drives the progress bar and `item` counts). */
  progress(update: { done: number; total?: number; failed?: number }): void;
  /** Emits a custom event on the engine's bus (`action:event`). */
  emit(name: string, payload?: Record<string, unknown>): void;
  /** Resolves a path relative to the project (config file's directory). */
  resolvePath(p: string): string;
}

export interface ActionDefinition<S extends z.ZodType = z.ZodType, O = unknown> {
  /** Name used in `uses:`, e.g. `checkAccount.bulk`. */
  name: string;
  description: string;
  /** Schema of `with:`; its JSON Schema is published in schema/flow.schema.json. */
  input: S;
  output: {
    description: string;
    /** Optional schema of the result, for docs. */
    schema?: z.ZodType;
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
  run(ctx: ActionContext, input: z.output<S>): Promise<O>;
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
