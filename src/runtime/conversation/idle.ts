/**
 * The idle sweeper of the dialogs: a session whose chat stays silent past its
 * dialog's `idle:` ends, with the dialog's goodbye. Each live session with an
 * idle time has one small timer record (DIALOG_IDLE_NS, written by the
 * dialog step with the session); every `everyMs` of the engine clock the
 * sweeper starts, for each timer due, a run of the dialog's flow whose event
 * is the idle timeout. The run's id is derived from the session and the
 * timer's time, so a timer fires once however many sweeps or daemons see it
 * (a live or finished run with that id is never started again), and the run
 * survives a crash as any run does. The dialog step decides (a session that
 * moved on since is left alone) and moves or clears the timer.
 */
import { MsgflowError } from '../../api/errors.js';
import type { Logger } from '../../engine/action.js';
import { DIALOG_IDLE_EVENT, type IdleTimer } from '../../engine/conversation/session.js';
import type { Flow } from '../../engine/flow/types.js';
import { notificationRunId } from '../../engine/notify/dispatcher.js';
import type { Engine } from '../../engine/run/types.js';
import { DIALOG_IDLE_NS, sharedRecords } from '../../engine/shared.js';
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';

export interface IdleSweeperOptions {
  store: EngineStore;
  clock: Clock;
  engine: Pick<Engine, 'start'>;
  /** The loaded flows: those with a conversation are swept. */
  flows: readonly Flow[];
  identityFor(instance: string): string;
  logger: Logger;
  /** How often the timers are looked at, ms of the engine clock (an idle goodbye goes out up to this late). @default 10000 */
  everyMs?: number;
}

export interface IdleSweeper {
  /** One pass now: the runs started. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

/** The run id of a timer's idle timeout: one per session and idle time. */
export function idleRunId(flow: string, identity: string, t: Pick<IdleTimer, 'chatId' | 'at'>): string {
  return notificationRunId(flow, identity, `${DIALOG_IDLE_EVENT}:${t.chatId}:${t.at}`);
}

/** Starts sweeping (nothing when no flow has a conversation). */
export function startIdleSweeper(o: IdleSweeperOptions): IdleSweeper {
  const byName = new Map(o.flows.filter((f) => f.conversation).map((f) => [f.name, f]));
  const timers = sharedRecords(o.store, DIALOG_IDLE_NS);
  const controller = new AbortController();
  const sweep = async (): Promise<number> => {
    let started = 0;
    const now = o.clock.now();
    for (const [, t] of await timers.entries()) {
      const flow = byName.get(t.flow);
      if (!flow || t.at > now) continue;
      if (await fire(o, flow, t)) started++;
    }
    return started;
  };
  const loop = async () => {
    while (!controller.signal.aborted) {
      await o.clock.sleep(o.everyMs ?? 10_000, controller.signal).catch(() => undefined);
      if (controller.signal.aborted) break;
      await sweep().catch((e: unknown) => o.logger.warn(`dialog idle timeouts: ${e instanceof Error ? e.message : String(e)}`));
    }
  };
  const running = byName.size > 0 ? loop() : Promise.resolve();
  return {
    sweep,
    async stop() {
      controller.abort();
      await running;
    },
  };
}

/** Starts the timer's idle run unless it exists; true when started. */
async function fire(o: IdleSweeperOptions, flow: Flow, t: IdleTimer): Promise<boolean> {
  const runId = idleRunId(flow.name, o.identityFor(t.instance), t);
  if (await o.store.getRun(runId)) return false;
  // senderData.chatId as a message's: a per-chat concurrency key (event.senderData.chatId) serializes it with the chat's messages.
  const event = { typeWebhook: DIALOG_IDLE_EVENT, chatId: t.chatId, senderData: { chatId: t.chatId }, instance: t.instance, at: t.at };
  try {
    await o.engine.start(flow, { trigger: 'notification', event, runId });
    return true;
  } catch (e) {
    if (e instanceof MsgflowError && ['RUN_LIVE', 'ENGINE_STOPPED', 'STORE_UNAVAILABLE'].includes(e.code)) return false;
    throw e;
  }
}
