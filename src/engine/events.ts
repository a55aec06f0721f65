/**
 * The engine's event bus: typed events that logging, progress display,
 * the scheduler and plugins subscribe to.
 */
import { EventEmitter } from 'eventemitter3';
import type { RunTrigger } from '../store/types.js';
import type { ProgressCounts } from './action.js';

export interface RunRef {
  runId: string;
  flow: string;
}

export interface EngineEvents {
  'run:started': [RunRef & { trigger: RunTrigger; dryRun: boolean }];
  /** The run's counters as its record has them (RunRecord.items*; the engine always sets all five). */
  'run:finished': [
    RunRef & {
      durationMs: number;
      itemsDone: number;
      itemsFailed: number;
      itemsInvalid?: number;
      itemsDuplicate?: number;
      itemsSkipped?: number;
    },
  ];
  'run:failed': [RunRef & { error: string; code?: string; step?: string }];
  'run:waiting': [RunRef & { step: string; until: number; reason: string }];
  'run:resumed': [RunRef & { step?: string }];
  'run:interrupted': [RunRef & { reason: string }];
  /**
   * `total`: a forEach step's items, or the records of a job (an action with
   * `countsRecords`, announced at its first count); absent for another single step.
   */
  'step:started': [RunRef & { step: string; action: string; total?: number }];
  /** The step's counters (ItemCounts) as its record has them, and its total when it has items. */
  'step:finished': [
    RunRef & {
      step: string;
      status: 'succeeded' | 'failed' | 'skipped';
      done: number;
      failed: number;
      invalid?: number;
      duplicate?: number;
      skipped?: number;
      total?: number;
      error?: string;
    },
  ];
  'step:retry': [RunRef & { step: string; attempt: number; delayMs: number; error: string; item?: number }];
  /** `skipped`: a per-item `if:` was false. */
  'item:finished': [RunRef & { step: string; index: number; status: 'succeeded' | 'failed' | 'skipped'; error?: string }];
  /** A long action's own progress (ctx.progress): absolute counters. */
  'step:progress': [RunRef & { step: string } & ProgressCounts];
  'schedule:fired': [{ flow: string; scheduledAt: number; firedAt: number }];
  'schedule:missed': [{ flow: string; scheduledAt: number; policy: 'none' | 'last' | 'all'; willRun: boolean }];
  'schedule:skipped': [{ flow: string; scheduledAt: number; reason: string }];
  /** ctx.emit() from an action, e.g. the audit's threshold crossing. */
  'action:event': [RunRef & { step: string; name: string; payload: Record<string, unknown> }];
  /**
   * A notification taken from an instance's channel (receiveNotification or a
   * webhook) by the daemon's consumer. `instance` is the configured instance
   * name, never its id; `lagMs` is receipt time minus the notification's own
   * timestamp.
   */
  /** `flowsSkipped`: flows the notification matched that started nothing (the chat is handed over to a human). */
  'notification:received': [{ instance: string; type: string; lagMs: number; flowsStarted: number; flowsSkipped?: number }];
  /**
   * One API call made through a configured client (not the local service's
   * own handling). `outcome` is 'ok' or the error code (src/api/error-codes.ts).
   */
  'api:call': [{ instance: string; method: string; outcome: string; durationMs: number }];
  /** The retention deleted finished runs that ended before `cutoff` (engine/run/retention.ts). */
  'runs:deleted': [{ deleted: number; byFlow: Record<string, number>; cutoff: number }];
  log: [{ level: 'debug' | 'info' | 'warn' | 'error'; message: string; fields?: Record<string, unknown> }];
}

export type EngineEventName = keyof EngineEvents;

/** @example bus.on('run:finished', (e) => console.log(e.flow, e.durationMs)) */
export class EngineBus extends EventEmitter<EngineEvents> {}

export function createBus(): EngineBus {
  return new EngineBus();
}
