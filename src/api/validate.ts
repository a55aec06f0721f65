import type { z } from 'zod';
import { formatError } from './error-codes.js';
import { ValidationError } from './errors.js';
import { METHOD_SPECS, type ApiMethod } from './methods.js';
import { REQUEST_SCHEMAS, STRICT_REQUEST_SCHEMAS } from './schemas.js';
import { fastCheck } from './fast-checks.js';
import type { ParsedRequest } from './types.js';

export interface ValidateOptions {
  /** Reject unknown keys (flow `with:` blocks). Default false: ignored, as the service does. */
  strict?: boolean;
}

/** The first zod issue as a ValidationError carrying the spec's text and the field. */
export function issueToValidationError(issue: z.core.$ZodIssue): ValidationError {
  const field = issue.path.length ? issue.path.map(String).join('.') : undefined;
  let details = issue.message;
  if (issue.code === 'unrecognized_keys') {
    details = issue.keys.map((k) => `'${k}' is not allowed`).join(', ');
  }
  return new ValidationError(details, field ?? (issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined));
}

/**
 * Validates a request body for `method`, applying the spec's defaults
 * (count 100, minutes 1440, saveInAddressbook true, force false,
 * receiveTimeout 5).
 *
 * @throws ValidationError with `message` exactly as the service answers it,
 *   e.g. `Validation failed. Details: 'count' must be a number`. For
 *   checkAccount with both or neither of phoneNumber/username the error has
 *   code `CHECK_ACCOUNT_TARGET`: the service answers it as `{status:false, reason}`.
 */
export function validateRequest<M extends ApiMethod>(method: M, body: unknown, options: ValidateOptions = {}): ParsedRequest<M> {
  // GET and DELETE carry no body: no parameters at all is an empty request (defaults apply).
  const input = body === undefined && METHOD_SPECS[method].httpMethod !== 'POST' ? {} : body;
  if (method === 'checkAccount' && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const broken = checkAccountTargetRule(input as Record<string, unknown>);
    if (broken) throw new ValidationError(broken.reason, broken.field, { code: 'CHECK_ACCOUNT_TARGET' });
  }
  // The hottest bodies, when plainly valid, skip zod (same output; anything else is the schema's to answer).
  const fast = fastCheck(method, input);
  if (fast !== undefined) return fast as ParsedRequest<M>;
  const schema = (options.strict ? STRICT_REQUEST_SCHEMAS : REQUEST_SCHEMAS)[method];
  const result = schema.safeParse(input);
  if (!result.success) throw issueToValidationError(result.error.issues[0]!);
  return result.data as ParsedRequest<M>;
}

/**
 * checkAccount's rule: exactly one of phoneNumber and username. Checks only
 * which keys are present, so it also serves flow validation, where values may
 * still be `${{ }}` templates.
 */
export function checkAccountTargetRule(body: Record<string, unknown>): { reason: string; field: string } | undefined {
  const hasPhone = body.phoneNumber !== undefined && body.phoneNumber !== null;
  const hasUser = body.username !== undefined && body.username !== null;
  if (hasPhone !== hasUser) return undefined;
  return { reason: formatError('CHECK_ACCOUNT_TARGET'), field: hasPhone ? 'username' : 'phoneNumber' };
}
