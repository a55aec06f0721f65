import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ActionContext, DurableState, Logger } from '../../src/engine/action.js';
import type { InstanceApi } from '../../src/api/types.js';
import { systemClock } from '../../src/util/clock.js';
import { createRegistry, registerBuiltins, type ActionRegistry } from '../../src/engine/registry/index.js';

export function tempProject(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-load-'));
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(dir, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return dir;
}

export function builtinRegistry(): ActionRegistry {
  const r = createRegistry();
  registerBuiltins(r);
  return r;
}

export function memoryState(): DurableState & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get: async <T>(k: string) => data.get(k) as T | undefined,
    set: async (k, v) => void data.set(k, structuredClone(v)),
    delete: async (k) => void data.delete(k),
    entries: async <T>(prefix = '') => [...data.entries()].filter(([k]) => k.startsWith(prefix)) as Array<[string, T]>,
  };
}

export interface LogLine {
  level: string;
  message: string;
  fields?: Record<string, unknown>;
}

/** A real ActionContext over a given client, recording logs. */
export function makeContext(client: Partial<InstanceApi>, opts: { dryRun?: boolean; state?: DurableState } = {}) {
  const logs: LogLine[] = [];
  const logger: Logger = {
    debug: (message, fields) => logs.push({ level: 'debug', message, fields }),
    info: (message, fields) => logs.push({ level: 'info', message, fields }),
    warn: (message, fields) => logs.push({ level: 'warn', message, fields }),
    error: (message, fields) => logs.push({ level: 'error', message, fields }),
  };
  const controller = new AbortController();
  const state = opts.state ?? memoryState();
  const journal: unknown[] = [];
  const ctx: ActionContext = {
    client: client as InstanceApi,
    instanceName: 'default',
    instance: { name: 'default', identity: 'default' },
    logger,
    run: { id: 'run-1', flow: 'test', step: 's', attempt: 1, dryRun: opts.dryRun ?? false, inputs: {} },
    signal: controller.signal,
    clock: systemClock,
    state,
    shared: () => memoryState(),
    journal: { append: async (...e: unknown[]) => void journal.push(...e), replay: async function* () { yield* journal as any[]; } },
    wait: async () => {},
    progress: () => {},
    emit: () => {},
    resolvePath: (p) => p,
  };
  return { ctx, logs, controller, state };
}
