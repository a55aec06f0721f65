/**
 * Progress of long steps while a run is going. On a terminal: one line
 * redrawn in place, at most ~10 times a second. Elsewhere (CI logs, files,
 * journald): a plain line per running step every few seconds and one when the
 * step ends, so a log stays readable and small.
 */
import type { EngineBus } from '../events.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { formatDuration, formatRate, renderBar } from './format.js';
import { trackSteps, type StepView } from './step-tracker.js';

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
  /** Redrawn bar (true) or periodic plain lines (false). @default stream.isTTY */
  isTTY?: boolean;
  /** Minimum time between redraws (TTY) or between plain lines. @default 100 on a TTY, 5000 otherwise */
  intervalMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

export interface ProgressReporter {
  /** Unsubscribes, cancels pending redraws and ends an open bar line. */
  close(): void;
}

/** Steps without items (a single action that reports no progress) have nothing to show. */
const hasItems = (v: StepView) => v.total !== undefined || v.processed > 0;

const counts = (v: StepView) => `${v.processed}/${v.total ?? '?'} (${v.failed} failed)`;
const eta = (v: StepView) => `ETA ${v.etaMs === undefined ? '--:--' : formatDuration(v.etaMs)}`;

/** `verify-leads/check [#####...............] 250/1000 (3 failed) 85.2 items/s ETA 00:08` */
export function formatBarLine(v: StepView): string {
  return `${v.flow}/${v.step} ${renderBar(v.processed, v.total)} ${counts(v)} ${formatRate(v.rate)} items/s ${eta(v)}`;
}

/** `verify-leads check: 250/1000 (3 failed), 85.2/s, ETA 00:08`; at the end `..., done in 00:12`. */
export function formatPlainLine(v: StepView): string {
  const tail = v.finished ? `done in ${formatDuration(v.elapsedMs)}` : eta(v);
  return `${v.flow} ${v.step}: ${counts(v)}, ${formatRate(v.rate)}/s, ${tail}`;
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

function ttyReporter(bus: EngineBus, stream: OutputStream, clock: Clock, interval: number): ProgressReporter {
  let lineOpen = false;
  let lastDraw = -Infinity;
  let latest: StepView | undefined;
  let trailing: AbortController | undefined;

  const draw = (v: StepView) => {
    const width = stream.columns && stream.columns > 1 ? stream.columns - 1 : undefined;
    const line = formatBarLine(v);
    // \r + "erase line": redraw in place without leaving the previous, longer text behind.
    stream.write(`\r\x1b[2K${width ? line.slice(0, width) : line}`);
    lineOpen = true;
    lastDraw = clock.now();
  };

  const cancelTrailing = () => {
    trailing?.abort();
    trailing = undefined;
  };

  const tracker = trackSteps(bus, clock, (v, kind) => {
    if (!hasItems(v)) return;
    if (kind === 'finished') {
      cancelTrailing();
      draw(v);
      stream.write('\n');
      lineOpen = false;
      latest = undefined;
      return;
    }
    latest = v;
    const wait = lastDraw + interval - clock.now();
    if (wait <= 0) {
      cancelTrailing();
      draw(v);
      return;
    }
    if (trailing) return; // a redraw is already due; it will show the newest counts
    const ac = new AbortController();
    trailing = ac;
    clock.sleep(wait, ac.signal).then(
      () => {
        if (trailing !== ac) return;
        trailing = undefined;
        // Re-read the counts: the rate and ETA move with time too.
        const still = latest && tracker.active().find((p) => p.runId === latest!.runId && p.step === latest!.step);
        if (still) draw(tracker.view(still));
      },
      () => {},
    );
  });

  return {
    close() {
      cancelTrailing();
      tracker.close();
      if (lineOpen) stream.write('\n');
      lineOpen = false;
    },
  };
}

function plainReporter(bus: EngineBus, stream: OutputStream, clock: Clock, interval: number): ProgressReporter {
  let ticker: AbortController | undefined;
  const printedAt = new Map<string, number>(); // step key -> processed count at the last line

  const k = (v: { runId: string; step: string }) => `${v.runId}\u0000${v.step}`;

  const tick = () => {
    const showing = tracker.active().map((p) => tracker.view(p)).filter(hasItems);
    for (const v of showing) {
      // Nothing new (e.g. the run is in a durable wait): no line.
      if (printedAt.get(k(v)) === v.processed) continue;
      printedAt.set(k(v), v.processed);
      stream.write(`${formatPlainLine(v)}\n`);
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
      printedAt.delete(k(v));
      if (hasItems(v)) stream.write(`${formatPlainLine(v)}\n`);
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
    close() {
      ticker?.abort();
      ticker = undefined;
      tracker.close();
    },
  };
}
