/**
 * A benchmark's RESULTS*.md: what its last run wrote, then a `## History` section of earlier runs (each
 * run's essential figure with its date; the design notes in docs/ keep only today's). A run rewrites
 * the first part and keeps the history as it was, so re-running a benchmark never drops it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const HISTORY = '\n## History\n';

/** A RESULTS file's two parts: the last run's text, and its history (without the heading; '' if none). */
export function readResults(file: string): { run: string; history: string } {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const at = text.indexOf(HISTORY);
  return at < 0 ? { run: text, history: '' } : { run: text.slice(0, at), history: text.slice(at + HISTORY.length).trim() };
}

/** Writes `run` (this run's results), then the history: `entries` (newest first) above what the file held. */
export function writeResults(file: string, run: string, entries: string[] = []): void {
  const history = [...entries, readResults(file).history].filter(Boolean).join('\n');
  writeFileSync(file, history ? `${run.trimEnd()}\n${HISTORY}\n${history}\n` : run);
}
