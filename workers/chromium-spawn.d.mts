import type { ChildProcess } from 'node:child_process';

/** How to start Chromium: the binary, its flags and the page it opens. */
export interface ChromiumCommand {
  path: string;
  args: string[];
  url: string;
}

/** A Chromium just spawned (spawnChromium), not yet known to be up. */
export interface SpawnedChromium {
  child: ChildProcess;
  /** Its profile folder (removed once it exits). */
  profile: string;
  /** Set when the spawn itself failed (e.g. ENOENT). */
  error: Error | undefined;
}

/** Start Chromium with a new profile folder in `profiles`; returns at once (see chromium-spawn.mjs). */
export function spawnChromium(command: ChromiumCommand, profiles: string): SpawnedChromium;
