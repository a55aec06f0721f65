/**
 * Progress of long steps while a run is going. On a terminal: one bar per
 * running step, kept below the log lines by cli-progress's multi-bar (log
 * lines are printed above the bars and the bars redrawn, never glued to a
 * bar). Elsewhere (CI logs, files, journald): a plain line per running step
 * every few seconds and one when the step ends, so a log stays readable and
 * small. A step with a single item has no bar: there is no progress to show.
 */
import { createRequire } from 'node:module';
import type cliProgress from 'cli-progress';
import type { EngineBus } from '../events.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { formatClock } from '../../util/duration.js';
import { escapeControl } from '../../util/printable.js';
import { formatCounts, formatRate, formatWaiting, renderBar } from './format.js';
import { trackSteps, type StepProgress, type StepView } from './step-tracker.js';

/** The part of a Writable the reporters use (process.stderr fits). */
export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  /** Terminal width; lines are cut to it so a redraw never wraps. */
  columns?: number;
}

export interface ProgressReporterOptions {
  bus: EngineBus;
  /** @default process.stderr */
  stream?: OutputStream;
  /** Bars redrawn in place (true) or periodic plain lines (false). @default stream.isTTY */
  isTTY?: boolean;
  /** Minimum time between redraws (TTY) or between plain lines. @default 100 on a TTY, 5000 otherwise */
  intervalMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

export interface ProgressReporter {
  /**
   * Prints one log line (no trailing newline needed) so that it never mixes
   * with a bar: on a terminal above the bars, which are redrawn under it.
   */
  print(line: string): void;
  /** Unsubscribes, stops redrawing and clears the bars (their final counts are in the log lines). */
  close(): void;
}

/** Steps with more than one item have something to show; a 1-item step (or one without items) does not. */
export const showsProgress = (v: Pick<StepView, 'total' | 'processed'>) => (v.total !== undefined ? v.total > 1 : v.processed > 1);

/** `250/1000 (247 done, 3 failed)`: the step's counters, in the same words as its end line and `msgflow runs`. */
const counts = (v: StepView) => `${v.processed}/${v.total ?? '?'} (${formatCounts(v)})`;
const eta = (v: StepView) => `ETA ${v.etaMs === undefined ? '--:--' : formatClock(v.etaMs)}`;

/**
 * `verify-leads/check [#####...............] 250/1000 (247 done, 3 failed) 85.2 items/s ETA 00:08`,
 * or while waiting `... 250/1000 (250 done) waiting until 21:14 (1h52m): checkAccount paused by ...`.
 * With `width` (the terminal's), the line fits it: the bar narrows, the counts
 * shorten to `250/1000`, and a wait's reason is cut, never its end.
 */
export function formatBarLine(view: StepView, now: number = Date.now(), width?: number): string {
  const v = shownView(view);
  const name = `${v.flow}/${v.step}`;
  const tail = (room?: number) =>
    v.waiting ? formatWaiting(v.waiting.reason, v.waiting.until, now, { width: room }) : `${formatRate(v.rate)} items/s ${eta(v)}`;
  const shapes = [
    `${name} ${renderBar(v.processed, v.total)} ${counts(v)} `,
    `${name} ${renderBar(v.processed, v.total, 10)} ${counts(v)} `,
    `${name} ${renderBar(v.processed, v.total, 10)} ${v.processed}/${v.total ?? '?'} `,
  ];
  if (width === undefined) return shapes[0] + tail();
  // Room the tail asks for: all of it, or while waiting the end and a readable piece of the reason.
  const need = v.waiting
    ? Math.min(tail().length, formatWaiting(undefined, v.waiting.until, now).length + 2 + READABLE_REASON)
    : tail().length;
  const head = shapes.find((h) => h.length + need <= width) ?? shapes[2]!;
  const line = head + tail(width - head.length);
  if (line.length <= width) return line;
  // A name too long for the terminal: a wait's line is cut at the front, so its end stays; another at its end.
  return v.waiting ? `…${line.slice(line.length - width + 1)}` : line.slice(0, width);
}

/**
 * The view with its names and a wait's reason escaped before anything is
 * measured: a reason may quote the service, and is shown, never obeyed by the
 * terminal (an escape sequence is wider than the character it stands for).
 */
function shownView(v: StepView): StepView {
  const waiting = v.waiting && { ...v.waiting, reason: escapeControl(v.waiting.reason) };
  return { ...v, flow: escapeControl(v.flow), step: escapeControl(v.step), ...(waiting ? { waiting } : {}) };
}

/** Characters of a wait's reason worth narrowing the bar for. */
const READABLE_REASON = 16;

/** `verify-leads check: 250/1000 (247 done, 3 failed), 85.2/s, ETA 00:08`; at the end `..., done in 00:12`. */
export function formatPlainLine(view: StepView, now: number = Date.now()): string {
  const v = shownView(view);
  const end = v.finished
    ? `${formatRate(v.rate)}/s, done in ${formatClock(v.elapsedMs)}`
    : v.waiting
      ? formatWaiting(v.waiting.reason, v.waiting.until, now)
      : `${formatRate(v.rate)}/s, ${eta(v)}`;
  return `${v.flow} ${v.step}: ${counts(v)}, ${end}`;
}

/**
 * @example
 * const progress = createProgressReporter({ bus });   // stderr, TTY detected
 * try { await handle.done } finally { progress.close() }
 */
export function createProgressReporter(opts: ProgressReporterOptions): ProgressReporter {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.isTTY ?? Boolean(stream.isTTY);
  const clock = opts.clock ?? systemClock;
  const interval = Math.max(1, opts.intervalMs ?? (tty ? 100 : 5000));
  return tty ? ttyReporter(opts.bus, stream, clock, interval) : plainReporter(opts.bus, stream, clock, interval);
}

const stepKey = (v: { runId: string; step: string }) => `${v.runId}\u0000${v.step}`;

function ttyReporter(bus: EngineBus, stream: OutputStream, clock: Clock, interval: number): ProgressReporter {
  let multi: cliProgress.MultiBar | undefined;
  const bars = new Map<string, cliProgress.SingleBar>();
  const live = new Map<string, StepProgress>();

  // cli-progress asks for the text of a bar at each redraw: it is read from
  // the live counts then, so a wait's countdown moves without events.
  const format = (_o: unknown, _p: unknown, payload: { key: string }) => {
    const p = live.get(payload.key);
    if (!p) return '';
    // One column spare: a line as wide as the terminal wraps on some of them.
    const width = stream.columns && stream.columns > 1 ? stream.columns - 1 : undefined;
    return formatBarLine(tracker.view(p), clock.now(), width);
  };

  const ensureMulti = () => {
    if (multi) return multi;
    // cli-progress (CommonJS, ~17 modules) once a terminal shows a bar, not in every process that reports progress.
    const { MultiBar } = createRequire(import.meta.url)('cli-progress') as typeof cliProgress;
    multi = new MultiBar({
      stream: stream as NodeJS.WritableStream,
      format: format as unknown as cliProgress.Options['format'],
      fps: 1000 / interval,
      // A log line moves the bars down a row: every bar must be written again, changed or not.
      forceRedraw: true,
      // Long log lines wrap as usual; bars are cut to the width by format().
      linewrap: true,
      hideCursor: false,
      clearOnComplete: true,
      gracefulExit: false,
    });
    return multi;
  };

  const removeBar = (k: string) => {
    const bar = bars.get(k);
    live.delete(k);
    if (!bar || !multi) return;
    bars.delete(k);
    if (bars.size === 0) {
      // The last bar: stop clears the whole bar area, leaving no fragment.
      multi.stop();
      multi = undefined;
    } else multi.remove(bar);
  };

  const tracker = trackSteps(bus, clock, (v, kind) => {
    const k = stepKey(v);
    if (kind === 'finished') {
      removeBar(k);
      return;
    }
    const p = tracker.active().find((x) => stepKey(x) === k);
    if (!p) return;
    live.set(k, p);
    if (!showsProgress(v)) return;
    const bar = bars.get(k);
    if (!bar) {
      bars.set(k, ensureMulti().create(v.total ?? 0, v.processed, { key: k }));
      multi!.update();
    } else {
      if (v.total !== undefined) bar.setTotal(v.total);
      bar.update(v.processed);
    }
  });

  // Runs that end without their steps' step:finished (failed, interrupted) take their bars along.
  const dropRun = (e: { runId: string }) => {
    for (const k of [...bars.keys()]) if (k.startsWith(`${e.runId}\u0000`)) removeBar(k);
  };
  bus.on('run:failed', dropRun);
  bus.on('run:interrupted', dropRun);
  bus.on('run:finished', dropRun);

  return {
    print(line) {
      if (multi) {
        // Each line clears its row first: the row held a bar a moment ago.
        multi.log(`\x1b[2K${line}\n`);
        multi.update();
      } else stream.write(`${line}\n`);
    },
    close() {
      bus.off('run:failed', dropRun);
      bus.off('run:interrupted', dropRun);
      bus.off('run:finished', dropRun);
      tracker.close();
      multi?.stop();
      multi = undefined;
      bars.clear();
      live.clear();
    },
  };
}

function plainReporter(bus: EngineBus, stream: OutputStream, clock: Clock, interval: number): ProgressReporter {
  let ticker: AbortController | undefined;
  const printedAt = new Map<string, string>(); // step key -> what the last line said (counts or wait)

  const tick = () => {
    const showing = tracker
      .active()
      .map((p) => tracker.view(p))
      .filter(showsProgress);
    for (const v of showing) {
      // Nothing new (e.g. the run is in a durable wait): no line.
      const state = v.waiting ? `w${v.waiting.until}` : `p${v.processed}`;
      if (printedAt.get(stepKey(v)) === state) continue;
      printedAt.set(stepKey(v), state);
      stream.write(`${formatPlainLine(v, clock.now())}\n`);
    }
  };

  // The ticker runs only while a step is running, so an idle daemon holds no timer.
  const ensureTicker = () => {
    if (ticker) return;
    const ac = new AbortController();
    ticker = ac;
    void (async () => {
      while (!ac.signal.aborted && tracker.active().length > 0) {
        try {
          await clock.sleep(interval, ac.signal);
        } catch {
          return;
        }
        tick();
      }
      if (ticker === ac) ticker = undefined;
    })();
  };

  const tracker = trackSteps(bus, clock, (v, kind) => {
    if (kind === 'finished') {
      printedAt.delete(stepKey(v));
      if (showsProgress(v)) stream.write(`${formatPlainLine(v, clock.now())}\n`);
      if (tracker.active().length === 0) {
        // Last step done: release the timer now rather than at the next tick.
        ticker?.abort();
        ticker = undefined;
      }
      return;
    }
    ensureTicker();
  });

  return {
    print(line) {
      stream.write(`${line}\n`);
    },
    close() {
      ticker?.abort();
      ticker = undefined;
      tracker.close();
    },
  };
}
