/**
 * Pieces of the flow schema that the conversation schema shares
 * (engine/conversation/schema.ts), apart so that neither imports the other.
 */
import { z } from 'zod';
import { DURATION_HINT, DURATION_PATTERN, parseDuration } from '../../util/duration.js';

/** Step ids and input names are used in expressions (`steps.<id>`, `inputs.<name>`). */
export const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const IDENT_HINT = "must start with a letter or '_' and contain only letters, digits and '_' (it is used in expressions)";

const DURATION_ERROR = `expected a duration: ${DURATION_HINT}`;

export const DurationSchema = z
  .union([z.string().regex(new RegExp(DURATION_PATTERN), { error: DURATION_ERROR }), z.number().int().nonnegative()], {
    error: DURATION_ERROR,
  })
  // Same text as above: the loader shows one line per distinct message.
  .refine((v) => parseDuration(v) !== undefined, { error: DURATION_ERROR })
  .meta({ description: `Milliseconds, or a duration such as 500ms, 2s, 10m, 1h30m.` })
  // Checked by the refine above: the model holds milliseconds.
  .transform((v) => parseDuration(v)!);

/** Where a step's work runs with the bullmq executor (engine/run/executor.ts placement). */
export const StepExecutorSchema = z.enum(['workers', 'local']).meta({
  description:
    "With executor: bullmq, where the step's work runs: workers (msgflow worker processes, the instance's queue) or local (the process that drives the run). Default: workers for a forEach's items and for a job (checkAccount.bulk, contacts.import, files.broadcast, messages.broadcast), local for any other single step. Ignored with the local executor.",
});
