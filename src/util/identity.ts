import { createHash } from 'node:crypto';

/**
 * The identity of an instance: a short hash of where it lives and which one it
 * is. Per-instance state (caches, pauses, contact records, audit trends,
 * opt-outs) is keyed by it, never by the config name, so pointing `default` at
 * a real instance never reads what the demo instance stored. The hash reveals
 * neither the instance id nor the token, so it may appear in logs and pages.
 *
 * @param apiUrl `local` for msgflow's local service, else the remote base URL
 * @example instanceIdentity('local', '1101000001') // 'local-5c1f0e2ab39d'
 */
export function instanceIdentity(apiUrl: string, idInstance: string | number): string {
  const base = apiUrl === 'local' ? 'local' : apiUrl.replace(/\/+$/, '').toLowerCase();
  const digest = createHash('sha256')
    .update(`${base}\n${String(idInstance)}`)
    .digest('hex')
    .slice(0, 12);
  return `${apiUrl === 'local' ? 'local' : 'inst'}-${digest}`;
}
