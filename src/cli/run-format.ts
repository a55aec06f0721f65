import { formatCounts, formatItems, formatSpan, type RunRecord, type StepRecord } from '../runtime/present.js';

/**
 * How long a run took (or has taken so far): its recorded duration, else
 * from its start to its end or last update. An interrupted run has no
 * recorded duration, and must not read as 0.
 */
export function runDurationMs(run: Pick<RunRecord, 'startedAt' | 'finishedAt' | 'durationMs' | 'updatedAt'>): number {
  if (run.durationMs !== undefined && run.durationMs > 0) return run.durationMs;
  return Math.max(0, (run.finishedAt ?? run.updatedAt) - run.startedAt);
}

/** A short, readable account of a finished run and each step's counts. */
export function formatRunSummary(run: RunRecord, steps: readonly StepRecord[]): string {
  const lines = [`run ${run.id} ${run.flow}: ${run.status}${run.dryRun ? ' (dry run)' : ''} in ${formatSpan(runDurationMs(run))}`];
  for (const s of steps) {
    // Steps with items (a forEach step's, a job's records) say their counters as the log's end line does.
    const counts = s.forEach || (s.total !== undefined && s.total !== 1) ? ` (${formatItems(s.total ?? 0)}): ${formatCounts(s)}` : '';
    lines.push(`  ${s.step} (${s.action}): ${s.status}${counts}${s.error ? ` - ${s.error.message}` : ''}`);
    const out = s.output as Record<string, unknown> | undefined;
    if (out && typeof out === 'object' && !Array.isArray(out) && !s.forEach) {
      // A job's summary: its counts (numbers) on one line, then its report file.
      const counts = Object.entries(out).filter(([, v]) => typeof v === 'number');
      if (counts.length > 0) lines.push(`    ${counts.map(([k, v]) => `${k}: ${String(v)}`).join(', ')}`);
      if (typeof out.report === 'string') lines.push(`    report: ${out.report}`);
      lines.push(...funnelLines(out.funnel, out.funnelReport));
    }
  }
  if (run.error && !steps.some((s) => s.error)) lines.push(`  error: ${run.error.message}`);
  return lines.join('\n');
}

/** A campaign's funnel (messages.broadcast's output), one line per variant. */
function funnelLines(funnel: unknown, file: unknown): string[] {
  if (funnel === null || typeof funnel !== 'object') return [];
  const lines = Object.entries(funnel as Record<string, Record<string, unknown>>).map(
    ([variant, c]) =>
      `    funnel ${variant}: ${Object.entries(c)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(', ')}`,
  );
  return typeof file === 'string' ? [...lines, `    funnel report: ${file}`] : lines;
}
