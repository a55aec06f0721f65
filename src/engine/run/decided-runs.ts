/**
 * Starting a run that was decided before it could start (an alert's run,
 * engine/alerts/dispatcher.ts), written as an intent (its derived id -> what
 * it needs) before it is started, so that a crash between deciding and
 * starting, or a busy concurrency slot, never loses it and never starts it
 * twice. The notification dispatcher keeps its own start, which also orders
 * a chat's intents and gathers debounced ones.
 */
import { MsgflowError } from '../../api/errors.js';
import type { EngineStore, RunTrigger } from '../../store/types.js';
import type { Logger } from '../action.js';
import type { Flow } from '../flow/types.js';
import type { Engine } from './types.js';

/** A decided run, as its intent record holds it. */
export interface DecidedRun {
  flow: string;
  event: Record<string, unknown>;
  /** When it was decided, ms. */
  at: number;
}

export interface DecidedRunDeps {
  engine: Pick<Engine, 'start'>;
  store: EngineStore;
  logger: Logger;
  /** The flow by name, undefined when it is not loaded any more. */
  flow(name: string): Flow | undefined;
}

/**
 * Starts the intent's run, unless it exists already; the intent is deleted
 * once the run exists or can never start, and kept when the run must wait
 * (its slot is busy, the engine is stopping, the store is away).
 */
export async function startDecidedRun(
  d: DecidedRunDeps,
  ns: string,
  runId: string,
  p: DecidedRun,
  trigger: Exclude<RunTrigger, 'resume'>,
): Promise<void> {
  const pending = d.store.kv(ns);
  const flow = d.flow(p.flow);
  if ((await d.store.getRun(runId)) || !flow) {
    if (!flow) d.logger.warn(`${trigger} run ${runId} is dropped: flow '${p.flow}' is not loaded any more`, { runId, flow: p.flow });
    await pending.delete(runId);
    return;
  }
  try {
    await d.engine.start(flow, { trigger, event: p.event, runId });
  } catch (e) {
    if (e instanceof MsgflowError && (e.code === 'RUN_LIVE' || e.code === 'ENGINE_STOPPED' || e.code === 'STORE_UNAVAILABLE')) {
      d.logger.info(`run ${runId} of ${flow.name} (${trigger}) waits: ${e.message}`, { runId, flow: flow.name });
      return;
    }
    // Not startable at all (e.g. a required input has no value): retrying cannot help.
    d.logger.error(`${trigger} run of ${flow.name} cannot start: ${e instanceof Error ? e.message : String(e)}`, {
      runId,
      flow: flow.name,
    });
  }
  await pending.delete(runId);
}
