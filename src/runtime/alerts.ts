/**
 * The alerts of a project's store, for `msgflow alerts` and the dashboard
 * (engine/alerts owns the records): opened alone, with no engine or plugins.
 */
import type { Config } from '../config/load.js';
import { listAlerts, type AlertRecord } from '../engine/alerts/records.js';
import { createStore } from '../store/create.js';

export type { AlertRecord };
export { listAlerts };

export function openAlerts(config: Config): { list(): Promise<AlertRecord[]>; close(): Promise<void> } {
  const store = createStore(config.store, config.baseDir);
  return { list: () => listAlerts(store), close: () => store.close() };
}
