/**
 * Chats handed to a human (engine/conversation/handover.ts), listed and
 * released for `msgflow handovers`: the project's store opened for them
 * alone, so the command works whatever else of the project fails to load.
 */
import type { Config } from '../config/load.js';
import { identityOf } from '../config/identity.js';
import { Handovers, type Handover } from '../engine/conversation/handover.js';
import { createStore } from '../store/create.js';
import { systemClock } from '../util/clock.js';

export type { Handover };

/** The project's handovers: those in force, and releasing a chat's (every instance's, or one's). */
export function openHandovers(config: Config): {
  list(): Promise<Handover[]>;
  release(chatId: string, instance?: string): Promise<Handover[]>;
  close(): Promise<void>;
} {
  const store = createStore(config.store, config.baseDir);
  const handovers = new Handovers({ store, clock: systemClock, identityFor: (name) => identityOf(config, name) });
  return {
    list: () => handovers.list(),
    async release(chatId, instance) {
      const hit = (await handovers.list()).filter((h) => h.chatId === chatId && (instance === undefined || h.instance === instance));
      for (const h of hit) await handovers.end(h.instance, h.chatId);
      return hit;
    },
    close: () => store.close(),
  };
}
