import cliProgress from 'cli-progress';

/** Progress of one long-running step: count work items as they finish. */
export interface Progress {
  /** Count `n` (default 1) more items done. */
  tick(n?: number): void;
  /** Change the expected total (e.g. once it becomes known). */
  setTotal(total: number): void;
  /** Finish: stop the bar / print the final line. Idempotent. */
  done(): void;
}

/** Interval between log lines when stderr is not a terminal. */
const LOG_INTERVAL_MS = 5000;
/** Minimum interval between bar redraws on a terminal. */
const BAR_FPS = 10;
/** Milliseconds per second. */
export const MS_PER_S = 1000;

/** True when progress output is suppressed (tests set TILEBAKE_QUIET). */
export function progressQuiet(): boolean {
  const v = process.env.TILEBAKE_QUIET;
  return v !== undefined && v !== '' && v !== '0';
}

/** Seconds as `1h02m`, `3m05s` or `12s`, for ETAs. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(r).padStart(2, '0')}s`;
  return `${r}s`;
}

/** A one-line summary: `label: 120/500 tiles (24%), 35.2 tiles/s, ETA 11s`. */
export function progressLine(label: string, done: number, total: number, unit: string, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (done * MS_PER_S) / elapsedMs : 0;
  const pct = total > 0 ? Math.floor((done / total) * 100) : 0;
  const eta = rate > 0 && total > done ? formatDuration((total - done) / rate) : total > done ? '?' : '0s';
  return `${label}: ${done}/${total} ${unit} (${pct}%), ${rate.toFixed(1)} ${unit}/s, ETA ${eta}`;
}

/** Progress that reports nothing. */
function silentProgress(): Progress {
  return { tick() {}, setTotal() {}, done() {} };
}

/** A cli-progress bar on stderr with done/total, rate and ETA. */
function barProgress(label: string, total: number, unit: string): Progress {
  const start = Date.now();
  let count = 0;
  let finished = false;
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {rate} ${unit}/s | ETA {eta_formatted}`,
      stream: process.stderr,
      fps: BAR_FPS,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  const rate = () => {
    const ms = Date.now() - start;
    return ms > 0 ? ((count * MS_PER_S) / ms).toFixed(1) : '0.0';
  };
  bar.start(total, 0, { rate: '0.0' });
  return {
    tick(n = 1) {
      if (finished) return;
      count += n;
      bar.update(count, { rate: rate() });
    },
    setTotal(t) {
      if (!finished) bar.setTotal(t);
    },
    done() {
      if (finished) return;
      finished = true;
      bar.update(count, { rate: rate() });
      bar.stop();
    },
  };
}

/** Periodic log lines on stderr (every ~5 s) and a final line. */
function logProgress(label: string, initialTotal: number, unit: string): Progress {
  const start = Date.now();
  let total = initialTotal;
  let count = 0;
  let finished = false;
  let lastLog = start;
  const write = () => process.stderr.write(`${progressLine(label, count, total, unit, Date.now() - start)}\n`);
  return {
    tick(n = 1) {
      if (finished) return;
      count += n;
      const now = Date.now();
      if (now - lastLog >= LOG_INTERVAL_MS) {
        lastLog = now;
        write();
      }
    },
    setTotal(t) {
      total = t;
    },
    done() {
      if (finished) return;
      finished = true;
      if (Date.now() - start >= LOG_INTERVAL_MS) write();
    },
  };
}

/** A bar (cli-progress) with done/total, rate/s and ETA on a TTY; periodic log lines (every ~5 s, to stderr) otherwise. */
export function createProgress(label: string, total: number, unit = 'tiles'): Progress {
  if (progressQuiet()) return silentProgress();
  if (process.stderr.isTTY) return barProgress(label, total, unit);
  return logProgress(label, total, unit);
}

/** One timed step of a log line (a stage's phases, a render's style load, drawing, encoding). */
export interface Step {
  name: string;
  seconds: number;
}

/** `tilemaker 1.42 s, pack 0.05 s`: steps for a log line. */
export function stepsText(steps: readonly Step[]): string {
  return steps.map((s) => `${s.name} ${s.seconds.toFixed(2)} s`).join(', ');
}

/** Run `f`, adding its wall time to `steps` as `name`. */
export async function timeStep<T>(steps: Step[], name: string, f: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const out = await f();
  steps.push({ name, seconds: secondsSince(t0) });
  return out;
}

/** Seconds since `t0` (a `performance.now()`). */
export function secondsSince(t0: number): number {
  return (performance.now() - t0) / MS_PER_S;
}

/** Print one line to stderr unless quiet (stage timings and notes). */
export function logLine(line: string): void {
  if (!progressQuiet()) process.stderr.write(`${line}\n`);
}
