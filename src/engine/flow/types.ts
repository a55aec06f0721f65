/**
 * A flow after loading and validation: what the loader produces and the
 * runner consumes. The types are inferred from the zod schema of the file
 * (flow/schema.ts), which also holds every default: one declaration of the
 * model. Durations are milliseconds; expressions stay as text (`${{ ... }}`
 * templates) and are evaluated by the runner at run time.
 */
import type { z } from 'zod';
import type { TemplateTable } from '../expr/template.js';
import type { FlowFileData, InputSchema, TriggerSchema } from './schema.js';

/** A value that may contain `${{ ... }}` templates anywhere inside it. */
export type Templated = unknown;

/** One step: flow/schema.ts StepSchema, in the model's names, plus where it starts in the file. */
export type FlowStep = Omit<FlowFileData['steps'][number], 'onFailure'> & {
  /** `on-failure:` steps: run, in order, when this step fails. Their own `onFailure` is never set. */
  onFailure?: FlowStep[];
  /** Where in the file the step starts (`flows/x.yaml:12:5`), for messages. */
  location: string;
  /**
   * The step's templates compiled once at load, each carrying its own flow
   * position (evaluation errors name it). Absent for a step not loaded from
   * a file: its templates are compiled when evaluated, and errors are not located.
   */
  templates?: TemplateTable;
};

/** Attempts (`maxAttempts`, default 1), `backoff` (default exponential), `delayMs` (default 1s), `maxDelayMs` (default 10m), `jitter` (default true). */
export type RetryPolicy = FlowStep['retry'];

/** A flow input: flow/schema.ts InputSchema. */
export type FlowInputDef = z.output<typeof InputSchema>;

/** When the flow runs by itself: flow/schema.ts TriggerSchema (`overlap` default skip, `missed` default none, `startup` default false). */
export type FlowTrigger = Omit<z.output<typeof TriggerSchema>, 'notification'> & { notification?: FlowNotificationTrigger };

/** `on.notification` (flow/schema.ts NotificationTriggerSchema), its `instance` resolved to the flow's own when not given. */
export type FlowNotificationTrigger = NonNullable<z.output<typeof TriggerSchema>['notification']> & { instance: string };

export type FlowSchedule = NonNullable<FlowTrigger['schedule']>;

export interface Flow extends Omit<FlowFileData, '$schema' | 'env' | 'steps' | 'on'> {
  on: FlowTrigger;
  /** Environment values visible as `env.*` (only those listed: flows do not see the whole environment). */
  env: Record<string, string>;
  /** Names of the secrets the flow reads (`${{ secrets.NAME }}`): its runs resolve only those. @default [] */
  secrets?: readonly string[];
  steps: FlowStep[];
  /** Absolute path of the file. */
  file: string;
  /** The file as messages show it: relative to the working directory it was loaded from, when under it. */
  displayFile: string;
  /** Directory relative input files resolve against (the project root: config file's dir). */
  baseDir: string;
  /**
   * SHA-256 (first 16 hex digits) of the file's text as it was loaded: what a
   * run records as its flow's hash. Absent on a flow built in code.
   */
  sourceHash?: string;
}

/** Every step of a flow: each main step followed by its `on-failure:` steps (the order check.ts reads them in). */
export function allSteps(flow: Pick<Flow, 'steps'>): FlowStep[] {
  return flow.steps.flatMap((s) => [s, ...(s.onFailure ?? [])]);
}
