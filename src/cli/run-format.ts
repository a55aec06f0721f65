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
    if (isPlanned(out)) lines.push(...planLines(out.planned));
    else if (out && typeof out === 'object' && !Array.isArray(out) && !s.forEach) {
      // A job's summary: its counts (numbers) on one line, then its report file.
      const counts = Object.entries(out).filter(([, v]) => typeof v === 'number');
      if (counts.length > 0) lines.push(`    ${counts.map(([k, v]) => `${k}: ${String(v)}`).join(', ')}`);
      if (typeof out.report === 'string') lines.push(`    report: ${out.report}`);
      lines.push(...funnelLines(out.funnel, out.funnelReport), ...planDiffLines(out.planDiff));
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

/** A plan's summary (actions/broadcast-plan.ts PlanSummary), as a step's output carries it. */
interface Planned {
  plan: string;
  recipients: number;
  byInstance: Record<string, number>;
  byVariant: Record<string, number>;
  skipped: Record<string, number | undefined>;
  firstAt?: string;
  lastAt?: string;
  durationMs: number;
}

/** A step's output that is a campaign's plan (msgflow run --plan). */
export function isPlanned(out: unknown): out is { planned: Planned } {
  return out !== null && typeof out === 'object' && typeof (out as { planned?: unknown }).planned === 'object';
}

const pairs = (o: Record<string, number | undefined>) =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(', ') || 'none';

/** What a plan holds: recipients per instance and variant, the skipped rows by reason, when its sends go out. */
export function planLines(p: Planned): string[] {
  const when = p.firstAt ? `first send ${p.firstAt}, last ${p.lastAt}, about ${formatSpan(p.durationMs)} from now` : 'no send';
  return [
    `    plan: ${p.recipients} recipients planned; ${p.plan}`,
    `    per instance: ${pairs(p.byInstance)}`,
    `    per variant: ${pairs(p.byVariant)}`,
    `    skipped: ${pairs(p.skipped)}`,
    `    ${when}`,
  ];
}

/** How an applied plan's outcomes differ from it (messages.broadcast's output after msgflow apply). */
function planDiffLines(d: unknown): string[] {
  if (d === null || typeof d !== 'object') return [];
  const c = d as Record<string, number | string>;
  return [
    `    against the plan: ${c.asPlanned} of ${c.planned} as planned, ${c.notSent} not sent, ${c.otherInstance} from another instance, ${c.late} later than planned, ${c.unplanned} not planned`,
    `    plan diff: ${c.report}`,
  ];
}
