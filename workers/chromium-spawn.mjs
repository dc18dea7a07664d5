// Spawning Debian's Chromium, in plain JavaScript: a render worker thread runs this before it can load
// TypeScript (workers/render-worker.mjs), so that its browser starts while the thread loads the rest.
// chromium-process.ts builds the command (flags, page URL) and watches the process.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Start Chromium (`command`: its path, flags and start page) with a new profile folder in `profiles`.
 * - Its own process group: killChromium kills it with every process it started.
 * - The DevTools pipe on fds 3 and 4 (`--remote-debugging-pipe`), which only this process holds: when
 *   the process (or the worker thread that spawned it) ends, even by SIGKILL, the pipe closes and
 *   Chromium exits. No orphans.
 * - Nothing else keeps the thread alive: the child and its pipes are unref'd.
 * Returns at once, while the browser starts; a spawn error is kept in `error` for watchChromium.
 */
export function spawnChromium(command, profiles) {
  const profile = mkdtempSync(join(profiles, 'profile-'));
  const child = spawn(command.path, [...command.args, `--user-data-dir=${profile}`, command.url], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const spawned = { child, profile, error: undefined };
  // Until watchChromium listens: an 'error' event without a listener would end the thread.
  child.once('error', (e) => (spawned.error = e));
  child.unref();
  for (const s of child.stdio.slice(2)) s?.unref?.();
  return spawned;
}
