/**
 * The `with:` fields every job shares, so that the four built-in jobs and a
 * plugin's job read their records, write their report and stop on failures
 * the same way.
 */
import { z } from 'zod';
import { inputFile, outputFile } from '../../engine/action.js';
import { DATA_FILE_EXTENSIONS } from '../../engine/flow/data-file.js';
import { REPORT_EXTENSIONS } from './report.js';

/** `file`: a data file of records, relative to the project (`msgflow validate` checks a literal path). */
export const fileField = (what: string) =>
  inputFile(
    z
      .string()
      .min(1)
      .optional()
      .describe(
        `Data file of ${what} (CSV with a header line, JSON array, JSON Lines, or YAML list), relative to the project; CSV, JSON and JSON Lines are read as a stream.`,
      ),
    { extensions: DATA_FILE_EXTENSIONS },
  );

/**
 * Where a job's records come from: a refinement (`.refine(...recordsFrom('file', 'items'))`)
 * that at least one of `keys` is given, naming them when none is.
 */
export function recordsFrom<K extends string>(...keys: K[]) {
  const error = keys.length === 2 ? `give ${keys[0]} or ${keys[1]}` : `give at least one of ${keys.join(', ')}`;
  return [(v: Partial<Record<K, unknown>>) => keys.some((k) => v[k] !== undefined), { error }] as const;
}

/** `items`: inline records (e.g. `${{ inputs.leads }}`). */
export const itemsField = (what: string) => z.array(z.unknown()).optional().describe(`Inline ${what}.`);

/** `report`: where the per-record report goes (`msgflow validate` checks a literal path's extension). */
export const reportField = () =>
  outputFile(
    z
      .string()
      .min(1)
      .optional()
      .describe('Report file, .csv or .json, relative to the project. @default reports/<flow>-<step>-<runId>.csv'),
    { extensions: REPORT_EXTENSIONS },
  );

/** `maxConsecutiveFailures`: the consecutive-failure guard's limit. */
export const maxConsecutiveFailuresField = (what: string) =>
  z
    .number()
    .int()
    .min(1)
    .default(5)
    .describe(`Stop the job after this many ${what} in a row fail for network/server reasons (the rest are not attempted). @default 5`);
