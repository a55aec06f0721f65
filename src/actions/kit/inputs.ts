/**
 * The `with:` fields every job shares, so that the four built-in jobs and a
 * plugin's job read their records, write their report and stop on failures
 * the same way.
 */
import { z } from 'zod';

/** `file`: a data file of records, relative to the project. */
export const fileField = (what: string) =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      `Data file of ${what} (CSV with a header line, JSON array, JSON Lines, or YAML list), relative to the project; CSV, JSON and JSON Lines are read as a stream.`,
    );

/** `items`: inline records (e.g. `${{ inputs.leads }}`). */
export const itemsField = (what: string) => z.array(z.unknown()).optional().describe(`Inline ${what}.`);

/** `report`: where the per-record report goes. */
export const reportField = () =>
  z.string().min(1).optional().describe('Report file, .csv or .json, relative to the project. @default reports/<flow>-<step>-<runId>.csv');

/** `maxConsecutiveFailures`: the consecutive-failure guard's limit. */
export const maxConsecutiveFailuresField = (what: string) =>
  z
    .number()
    .int()
    .min(1)
    .default(5)
    .describe(`Stop the job after this many ${what} in a row fail for network/server reasons (the rest are not attempted). @default 5`);
