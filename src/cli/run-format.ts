import type { RunRecord, StepRecord } from '../store/types.js';
import { formatDuration } from '../engine/progress/index.js';

/** A short, readable account of a finished run and each step's counts. */
export function formatRunSummary(run: RunRecord, steps: readonly StepRecord[]): string {
  const lines = [`run ${run.id} ${run.flow}: ${run.status}${run.dryRun ? ' (dry run)' : ''} in ${formatDuration(run.durationMs ?? 0)}`];
  for (const s of steps) {
    const counts = s.forEach ? ` ${s.done}/${s.total ?? '?'} done, ${s.failed} failed` : '';
    lines.push(`  ${s.step} (${s.action}): ${s.status}${counts}${s.error ? ` - ${s.error.message}` : ''}`);
    const out = s.output as Record<string, unknown> | undefined;
    if (out && typeof out === 'object' && !s.forEach) {
      const summary = (out.summary ?? out.counts) as Record<string, unknown> | undefined;
      if (summary && typeof summary === 'object') lines.push(`    ${Object.entries(summary).map(([k, v]) => `${k}: ${String(v)}`).join(', ')}`);
      if (typeof out.report === 'string') lines.push(`    report: ${out.report}`);
    }
  }
  if (run.error && !steps.some((s) => s.error)) lines.push(`  error: ${run.error.message}`);
  return lines.join('\n');
}
