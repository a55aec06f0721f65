import type { RunRecord, StepRecord } from '../store/types.js';
import { formatDuration } from '../engine/progress/index.js';

/** A short, readable account of a finished run and each step's counts. */
export function formatRunSummary(run: RunRecord, steps: readonly StepRecord[]): string {
  const lines = [`run ${run.id} ${run.flow}: ${run.status}${run.dryRun ? ' (dry run)' : ''} in ${formatDuration(run.durationMs ?? 0)}`];
  for (const s of steps) {
    const counts = s.forEach ? ` ${s.done}/${s.total ?? '?'} done, ${s.failed} failed` : '';
    lines.push(`  ${s.step} (${s.action}): ${s.status}${counts}${s.error ? ` - ${s.error.message}` : ''}`);
    const out = s.output as Record<string, unknown> | undefined;
    if (out && typeof out === 'object' && !Array.isArray(out) && !s.forEach) {
      // A job's summary: its counts (numbers) on one line, then its report file.
      const counts = Object.entries(out).filter(([, v]) => typeof v === 'number');
      if (counts.length > 0) lines.push(`    ${counts.map(([k, v]) => `${k}: ${String(v)}`).join(', ')}`);
      if (typeof out.report === 'string') lines.push(`    report: ${out.report}`);
    }
  }
  if (run.error && !steps.some((s) => s.error)) lines.push(`  error: ${run.error.message}`);
  return lines.join('\n');
}
