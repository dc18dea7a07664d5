/**
 * Debian's Chromium as a child process, opened on the render page. The browser is started by a plain
 * spawn (chromium-spawn.mjs: no playwright-core needed), so a render worker thread starts it before it
 * has loaded TypeScript and playwright-core, and the page, MapLibre and the style load in the meantime;
 * the thread then attaches with `chromium.connectOverCDP(endpoint)` (workers/render-browser.ts).
 *
 * - The DevTools endpoint is a WebSocket on 127.0.0.1 (`--remote-debugging-port=0`, port chosen by
 *   Chromium and read from its stderr).
 * - Chromium also gets `--remote-debugging-pipe` on fds 3 and 4, which only the spawning thread holds:
 *   when it ends (even by SIGKILL of the process), the pipe closes and Chromium exits. No orphans.
 * - Each browser has its own throw-away profile folder, removed when it exits. A build's browsers keep
 *   theirs in one folder (createProfiles) that the build removes at its end (removeProfiles), also
 *   those of browsers that outlived the worker thread that started them.
 */
import { access, constants, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { UserError } from '../lib/errors.ts';
import { alive, processesWith } from '../lib/process-tree.ts';
import type { ChromiumCommand, SpawnedChromium } from './chromium-spawn.mjs';

export type { ChromiumCommand, SpawnedChromium } from './chromium-spawn.mjs';

/** Debian's Chromium; override with TILEBAKE_CHROMIUM. */
export const CHROMIUM_PATH = process.env.TILEBAKE_CHROMIUM || '/usr/lib/chromium/chromium';

/** Flags measured to work (and to be fast) for headless SwiftShader WebGL on a CPU-only machine. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
  // Nothing leaves the machine: every host but the local asset server fails to resolve.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

/**
 * Switches playwright-core's own launch adds (chromiumSwitches): a plain spawn needs them for the same
 * quiet, automation-friendly browser (no crash reporter, extensions, field trials, background
 * services or hang monitor; sRGB colour; no IPC flood throttling of the many CDP calls).
 */
const AUTOMATION_ARGS = [
  '--disable-field-trial-config',
  '--disable-back-forward-cache',
  '--disable-breakpad',
  '--disable-component-extensions-with-background-pages',
  '--no-default-browser-check',
  '--disable-default-apps',
  '--disable-dev-shm-usage',
  '--disable-extensions',
  '--allow-pre-commit-input',
  '--disable-hang-monitor',
  '--disable-ipc-flooding-protection',
  '--disable-popup-blocking',
  '--disable-prompt-on-repost',
  '--force-color-profile=srgb',
  '--metrics-recording-only',
  '--password-store=basic',
  '--use-mock-keychain',
  '--no-service-autorun',
  '--disable-search-engine-choice-screen',
  '--hide-scrollbars',
  '--mute-audio',
];

/**
 * Features switched off (one --disable-features switch: a second would replace the first). Headless
 * Chromium 156 loads the omnibox popup's WebUI (chrome://omnibox-popup.top-chrome/) in a renderer of
 * its own at start-up, ~0.6 CPU-s per browser for a window nobody sees: the first two names. The
 * rest are what playwright-core switches off (background requests, profile teardown, paint holding).
 */
const DISABLED_FEATURES = [
  'WebUIOmniboxPopup',
  'WebUIOmniboxAimPopup',
  'DestroyProfileOnBrowserClose',
  'MediaRouter',
  'PaintHolding',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
];

/** Window size in CSS pixels (the render page sizes its map container itself; this only needs to exist). */
const WINDOW_SIZE = '1280,1280';
/** Chromium prints this line on stderr once the DevTools endpoint is listening. */
const ENDPOINT_LINE = /DevTools listening on (ws:\/\/\S+)/;
/** Stderr kept for error messages. */
const STDERR_TAIL = 4000;
/** How long a browser may take to start (TILEBAKE_CHROMIUM_START_TIMEOUT_MS overrides, e.g. for a very slow machine). */
export const START_TIMEOUT_MS = Number(process.env.TILEBAKE_CHROMIUM_START_TIMEOUT_MS) || 30_000;

/** Chromium printed no DevTools endpoint within START_TIMEOUT_MS (it was killed). */
export class ChromiumStartTimeout extends Error {}

/** A running Chromium. */
export interface ChromiumProcess {
  readonly pid: number;
  /** DevTools WebSocket URL, for `chromium.connectOverCDP`. */
  readonly endpoint: string;
  /** Resolves once the browser has exited and its profile folder is removed. */
  readonly exited: Promise<void>;
  /** False once the browser process has exited (its pid may then belong to another process). */
  readonly running: boolean;
}

/** Throw a UserError with the install command when Chromium is not installed. */
export async function assertChromium(path = CHROMIUM_PATH): Promise<void> {
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new UserError(
      `Chromium not found at ${path} (needed to render styles). Install it with \`sudo apt-get install chromium\`, or set TILEBAKE_CHROMIUM to its path.`,
    );
  }
}

/**
 * Kill a browser started by spawnChromium, with every process it started (renderer, GPU, network
 * service: they share its process group). Works from any thread; a browser already gone is ignored.
 */
export function killChromium(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already exited.
    }
  }
}

/** Profile folders are `tilebake-chromium-<pid of the node process>-XXXXXX` in the temp folder. */
const PROFILE_PREFIX = 'tilebake-chromium-';

/**
 * Remove the profile folders of builds that died without cleaning up (SIGKILL: their browsers exit
 * with them, but nobody removes the folder). Once per process.
 */
let staleProfilesRemoved: Promise<void> | undefined;
function removeStaleProfiles(): Promise<void> {
  staleProfilesRemoved ??= (async () => {
    const dir = tmpdir();
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names) {
      const owner = name.startsWith(PROFILE_PREFIX) ? Number.parseInt(name.slice(PROFILE_PREFIX.length), 10) : Number.NaN;
      if (Number.isNaN(owner) || alive(owner)) continue;
      await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }
  })();
  return staleProfilesRemoved;
}

/**
 * A folder for the profiles of one build's browsers, `tilebake-chromium-<pid>-XXXXXX` in the temp
 * folder: a browser may outlive the worker thread that started it (it exits when its pipe closes),
 * which then cannot remove its profile; the build removes the whole folder (removeProfiles).
 */
export async function createProfiles(): Promise<string> {
  await removeStaleProfiles();
  return mkdtemp(join(tmpdir(), `${PROFILE_PREFIX}${process.pid}-`));
}

/** How long removeProfiles waits for the last browsers using the folder to exit. */
const PROFILES_EXIT_WAIT_MS = 10_000;
const PROFILES_POLL_MS = 50;

/**
 * Remove a createProfiles folder once no process uses a profile in it (the browsers of ended worker
 * threads exit when their pipe closes). A folder still in use after ~10 s is left for the next
 * build's start-up, which removes the folders of builds that are gone.
 */
export async function removeProfiles(dir: string): Promise<void> {
  const marker = `--user-data-dir=${dir}/`;
  for (let waited = 0; processesWith(marker).length > 0; waited += PROFILES_POLL_MS) {
    if (waited >= PROFILES_EXIT_WAIT_MS) return;
    await new Promise((r) => setTimeout(r, PROFILES_POLL_MS));
  }
  await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
}

/** The command that starts Chromium on `url` (spawnChromium adds the profile folder). */
export function chromiumCommand(url: string): ChromiumCommand {
  return {
    path: CHROMIUM_PATH,
    args: [...AUTOMATION_ARGS, ...CHROMIUM_ARGS, `--disable-features=${DISABLED_FEATURES.join(',')}`, '--remote-debugging-port=0', '--remote-debugging-pipe', `--window-size=${WINDOW_SIZE}`],
    url,
  };
}

/**
 * Watch a Chromium just spawned (spawnChromium): resolves once its DevTools endpoint is listening;
 * rejects, killing it, when it fails to start, exits first or takes longer than START_TIMEOUT_MS.
 * Its profile folder is removed once it exits.
 */
export function watchChromium(spawned: SpawnedChromium): Promise<ChromiumProcess> {
  const { child, profile } = spawned;
  let running = child.exitCode === null && child.signalCode === null;
  child.once('exit', () => (running = false));
  const exited = new Promise<void>((resolve) => {
    const removeProfile = () => void rm(profile, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined).finally(resolve);
    if (running) child.once('exit', removeProfile);
    else removeProfile();
  });
  let stderr = '';
  return new Promise<ChromiumProcess>((resolve, reject) => {
    let settled = false;
    const fail = (why: string, timedOut = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.pid !== undefined) killChromium(child.pid);
      const message = `Chromium (${CHROMIUM_PATH}) ${why}${stderr.trim() ? `:\n${stderr.trim().slice(-STDERR_TAIL)}` : ''}`;
      reject(timedOut ? new ChromiumStartTimeout(message) : new Error(message));
    };
    const timer = setTimeout(() => fail(`did not start within ${START_TIMEOUT_MS} ms`, true), START_TIMEOUT_MS);
    if (spawned.error) return fail(`could not be started: ${spawned.error.message}`);
    if (!running) return fail(`exited before it was ready (${child.signalCode ?? `exit code ${child.exitCode}`})`);
    child.once('error', (e) => fail(`could not be started: ${e.message}`));
    child.once('exit', (code, signal) => fail(`exited before it was ready (${signal ?? `exit code ${code}`})`));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      // Keep reading for the browser's whole life (a full pipe would block it); keep only a tail.
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
      const m = settled ? null : ENDPOINT_LINE.exec(stderr);
      if (!m || child.pid === undefined) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        pid: child.pid,
        endpoint: m[1],
        exited,
        get running() {
          return running;
        },
      });
    });
  });
}
