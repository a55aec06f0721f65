/**
 * What an instance named in config.yaml is known by in the store: its
 * identity. It follows from the config alone, so every layer that reads
 * per-instance state (the runtime, the dashboard) asks here.
 */
import { instanceIdentity } from '../util/identity.js';
import { localInstanceOf, type Config } from './load.js';

/**
 * The identity (see util/identity.ts) of an instance named in config.yaml; for
 * `apiUrl: local`, the local instance it resolves to. Unknown names map to
 * themselves so that the engine's error about them stays the one the user sees.
 */
export function identityOf(config: Config, name: string): string {
  const inst = config.instances[name];
  if (!inst) return name;
  if (inst.apiUrl !== 'local') return instanceIdentity(inst.apiUrl, inst.idInstance ?? '');
  const target = localInstanceOf(config, inst);
  return instanceIdentity('local', target?.idInstance ?? inst.idInstance ?? name);
}
