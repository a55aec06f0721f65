import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Constant-time check of an `Authorization: Bearer <token>` header against
 * the expected token (the dashboard's and the webhook receiver's). An empty
 * expected token never matches.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (token === '') return false;
  const m = /^Bearer\s+(.+)$/i.exec((header ?? '').trim());
  if (!m) return false;
  // Digests have the same length whatever was sent, as timingSafeEqual requires.
  const a = createHash('sha256').update(m[1]!).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}
