import { createHash } from 'node:crypto';

/**
 * The fingerprint msgflow records of flow files, inputs and plans: the first
 * 16 hex digits of a SHA-256. One function, so that a hash taken at load
 * (Flow.sourceHash) and one taken of the file later agree.
 */
export function shortHash(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex').slice(0, 16);
}
