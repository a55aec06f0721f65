/**
 * A flow after loading and validation: what the loader produces and the
 * runner consumes. Durations are milliseconds; expressions stay as text
 * (`${{ ... }}` templates) and are evaluated by the runner at run time.
 */

/** A value that may contain `${{ ... }}` templates anywhere inside it. */
export type Templated = unknown;

export interface RetryPolicy {
  /** Total attempts including the first. @default 1 */
  maxAttempts: number;
  /** @default exponential */
  backoff: 'fixed' | 'exponential';
  /** First delay, ms. @default 1000 */
  delayMs: number;
  /** Cap on a single delay, ms. @default 600000 */
  maxDelayMs: number;
  /** Randomise each delay in [delay/2, delay]. @default true */
  jitter: boolean;
}

export interface FlowStep {
  id: string;
  name?: string;
  /** Action name, built-in or from a plugin. */
  uses: string;
  /** Template: evaluated to boolean before the step runs. */
  if?: string;
  /** Template: evaluated to an array; the step runs once per item. */
  forEach?: Templated;
  /** Items in flight at once. @default 1 */
  concurrency: number;
  /** Action input; templates evaluated per run (and per item). */
  with: Record<string, Templated>;
  retry: RetryPolicy;
  /** Per attempt, ms; undefined: none. */
  timeoutMs?: number;
  /** What a failure does: fail the run (default) or record it and go on. */
  continueOnError: boolean;
  /** Where in the file the step starts, for messages. */
  location: string;
}

export interface FlowInputDef {
  /** A data file (CSV, JSON or YAML), relative to the flow file's project. */
  file?: string;
  /** Inline value. */
  value?: unknown;
  /** Used when neither the CLI nor the file gives a value. */
  default?: unknown;
  description?: string;
  /** `--input key=value` values are coerced to this. @default any */
  type?: 'string' | 'number' | 'boolean' | 'array' | 'object' | 'any';
  required?: boolean;
  /** With `file`: the most rows (items) the file may hold; the whole input is held in memory. @default 100000 */
  maxRows?: number;
}

export interface FlowSchedule {
  cron: string;
  /** IANA zone. @default the machine's zone */
  timezone?: string;
}

/** `on.notification`: which notifications start a run of the flow. */
export interface FlowNotificationTrigger {
  /** The notification's typeWebhook. @default incomingMessageReceived */
  type: string;
  /** Case-insensitive regular expression (source text) the trimmed message text or caption must match. */
  text?: string;
  /** Only notifications of this chat. */
  chatId?: string;
  /** Config name of the instance whose notifications trigger the flow. @default the flow's instance */
  instance: string;
}

export interface FlowTrigger {
  schedule?: FlowSchedule;
  notification?: FlowNotificationTrigger;
  /** @default skip */
  overlap: 'skip' | 'queue' | 'allow';
  /** @default none */
  missed: 'none' | 'last' | 'all';
  /** Run once when `msgflow start` starts. @default false */
  startup: boolean;
}

export interface Flow {
  name: string;
  description?: string;
  /** A name from config.yaml `instances`. @default default */
  instance: string;
  on: FlowTrigger;
  inputs: Record<string, FlowInputDef>;
  /** Environment values visible as `env.*` (only those listed: flows do not see the whole environment). */
  env: Record<string, string>;
  steps: FlowStep[];
  /**
   * Runs of this flow (or of its group) live at once, enforced through the
   * store. @default { group: flow name, max: 1 when a step writes, else unlimited }
   */
  concurrency?: { group?: string; max?: number };
  /** Absolute path of the file. */
  file: string;
  /** Directory relative input files resolve against (the project root: config file's dir). */
  baseDir: string;
}
