import { randomBytes } from 'node:crypto';

/** A message id in the real service's style: 32 upper-case hex characters. */
export function newMessageId(): string {
  return randomBytes(16).toString('hex').toUpperCase();
}
