/**
 * The shared namespaces: durable state kept across runs and flows
 * (`ctx.shared(ns)`), each declared once, here, with the type of its records,
 * so that the action that writes a namespace, the consumer that fills it, the
 * dashboard and `msgflow pauses` that read it name the same thing: a rename
 * is one edit, never a silent split of the data. Their store namespace (the
 * `shared:` prefix) is made by {@link sharedKvName} alone.
 *
 * Per-instance data is keyed by the instance's identity, inside the
 * namespace (`<identity>:<key>`) or in the namespace's name (the families
 * below), never by its config name.
 */
import type { DurableState, EngineStore } from '../store/types.js';
import type { PauseRecord } from './run/pauses.js';

/** A namespace of `ctx.shared()` and the type of its records. */
export interface SharedNamespace<R> {
  readonly name: string;
  /** Never set: carries the record type (see {@link sharedRecords}). */
  readonly records?: R;
}

/** Declares a shared namespace. Only this module declares them. */
function namespace<R>(name: string): SharedNamespace<R> {
  return Object.freeze({ name });
}

/** The store's kv namespace behind a shared namespace: the one place its `shared:` prefix is written. */
export function sharedKvName(ns: string | SharedNamespace<unknown>): string {
  return `shared:${typeof ns === 'string' ? ns : ns.name}`;
}

/** A shared namespace's state, as `ctx.shared(ns)` gives it to actions (plugins name theirs with a string). */
export function sharedState(store: Pick<EngineStore, 'kv'>, ns: string | SharedNamespace<unknown>): DurableState {
  return store.kv(sharedKvName(ns));
}

/** A declared namespace's records, typed. */
export interface SharedRecords<R> {
  get(key: string): Promise<R | undefined>;
  set(key: string, value: R): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key with this prefix, with its record. */
  entries(prefix?: string): Promise<Array<[string, R]>>;
}

/** A declared namespace's records, typed by its declaration. */
export function sharedRecords<R>(store: Pick<EngineStore, 'kv'>, ns: SharedNamespace<R>): SharedRecords<R> {
  const kv = sharedState(store, ns);
  return {
    get: (key) => kv.get<R>(key),
    set: (key, value) => kv.set(key, value),
    delete: (key) => kv.delete(key),
    entries: (prefix) => kv.entries<R>(prefix),
  };
}

/** `${identity}:${scope}` -> the instance-wide pause (engine/run/pauses.ts): `msgflow pauses`, the dashboard's Lift. */
export const PAUSES_NS = namespace<PauseRecord>('pauses');
