import { randomBytes } from 'node:crypto';

/**
 * A run id: the flow name (made file-name safe), the start time in base 36
 * (ids sort by start) and 6 random hex digits. Safe as a file name.
 *
 * @example newRunId('verify-leads', 1767258000000) // 'verify-leads-mjv4x1c0-3fa9c2'
 */
export function newRunId(flow: string, now: number): string {
  const name = flow.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64) || 'flow';
  return `${name}-${now.toString(36)}-${randomBytes(3).toString('hex')}`;
}
