/**
 * Debian's Chromium headless shell (package `chromium-headless-shell`: Chromium's old headless mode,
 * without the browser UI, profile services and extensions that the full browser's `--headless` starts;
 * Playwright and Puppeteer use the same shell for headless), started by playwright-core
 * (`chromium.launch`): Playwright adds its own
 * automation switches, holds the DevTools pipe (when the thread or process that launched it ends,
 * the pipe closes and Chromium exits) and removes its throw-away profile. tilebake adds only the
 * switches of its own below: SwiftShader WebGL, and no network beyond loopback.
 */
import { randomUUID } from 'node:crypto';
import { access, constants } from 'node:fs/promises';
import type { BrowserContext } from 'playwright-core';
import { UserError } from '../lib/errors.ts';
import { packageRequire } from '../lib/package-root.ts';
import { processesWith } from '../lib/process-tree.ts';

/**
 * Debian's Chromium headless shell; override with TILEBAKE_CHROMIUM (the full browser,
 * /usr/lib/chromium/chromium, works too: ~3 CPU s more per start, docs/render-performance.md).
 */
export const CHROMIUM_PATH = process.env.TILEBAKE_CHROMIUM || '/usr/lib/chromium/chromium-headless-shell';

/** tilebake's own switches, measured to work (and to be fast) for headless SwiftShader WebGL on a CPU-only machine. */
export const CHROMIUM_ARGS = [
  '--use-angle=swiftshader',
  '--disable-gpu',
  '--disable-quic',
  '--disable-sync',
  // Nothing leaves the machine: every host but the local render host fails to resolve.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

/** How long a browser may take to start (TILEBAKE_CHROMIUM_START_TIMEOUT_MS overrides, e.g. for a very slow machine). */
export const START_TIMEOUT_MS = Number(process.env.TILEBAKE_CHROMIUM_START_TIMEOUT_MS) || 30_000;
/** How long a browser's graceful close may take before its processes are killed. */
const CLOSE_TIMEOUT_MS = 5_000;
/** A switch Chromium ignores, naming one launch: its processes are found by it and killed (killChromium). */
const MARKER_SWITCH = '--tilebake-browser=';

/** A browser started by launchChromium: its one (persistent) context, and the mark of its processes. */
export interface LaunchedChromium {
  context: BrowserContext;
  /** False once the browser is gone (closed, killed or crashed). */
  readonly connected: boolean;
  /** The marker switch on its command line (killChromium). */
  marker: string;
}

/**
 * playwright-core, loaded on first use (a browser's start), with require: it is CommonJS (7 MB of
 * bundles), and importing it as an ES module through the tsx loader costs each worker thread's
 * start-up more (measured in a worker with tsx, 3 runs: 337-357 ms and 391-411 CPU-ms with require,
 * 407-452 ms and 515-614 CPU-ms with import).
 */
let playwright: typeof import('playwright-core') | undefined;
function playwrightChromium(): (typeof import('playwright-core'))['chromium'] {
  playwright ??= packageRequire('playwright-core') as typeof import('playwright-core');
  return playwright.chromium;
}

/** True for playwright-core's timeout error (a start that took longer than START_TIMEOUT_MS). */
export function isStartTimeout(e: unknown): boolean {
  return e instanceof Error && e.name === 'TimeoutError';
}

/** Throw a UserError with the install command when Chromium is not installed. */
export async function assertChromium(path = CHROMIUM_PATH): Promise<void> {
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new UserError(
      `Chromium not found at ${path} (needed to render styles). Install it with \`sudo apt-get install chromium-headless-shell\`, or set TILEBAKE_CHROMIUM to its path.`,
    );
  }
}

/**
 * Start headless Chromium through playwright-core, with tilebake's switches and a marker switch of
 * its own, in a persistent context on a throw-away profile that playwright-core creates and removes
 * (an incognito context would keep every Blob in memory: the render page's uploads are large).
 */
export async function launchChromium(viewport: { width: number; height: number }): Promise<LaunchedChromium> {
  const marker = `${MARKER_SWITCH}${process.pid}-${randomUUID()}`;
  const context = await playwrightChromium().launchPersistentContext('', {
    viewport,
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_ARGS, marker],
    headless: true,
    timeout: START_TIMEOUT_MS,
    // The build and the server handle their own signals; the browser ends with them (its pipe closes).
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  let connected = true;
  context.once('close', () => (connected = false));
  return {
    context,
    marker,
    get connected() {
      return connected;
    },
  };
}

/**
 * Close a launched browser: gracefully, and when that takes longer than CLOSE_TIMEOUT_MS (a hung
 * browser) or `graceful` is false, by SIGKILL of its process group (playwright-core starts the
 * browser as a group leader: renderer, GPU and utility processes go with it). The browser process
 * is the one carrying the launch's marker switch.
 */
export async function killChromium(launched: LaunchedChromium, graceful = true): Promise<void> {
  if (graceful) {
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      launched.context.close().then(() => true, () => false),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    if (closed) return;
  }
  for (const pid of processesWith(launched.marker)) {
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
  await launched.context.close().catch(() => undefined);
}
