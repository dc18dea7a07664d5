/**
 * The external programs the OSM source runs (Debian's tilemaker and osmium-tool): finding them, running
 * them with their output parsed line by line, and killing runs a SIGKILLed build left behind.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, appendFile, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { commandLine } from '../../lib/process-tree.ts';

/** A program the OSM source needs, with the Debian package that installs it. */
export interface ToolSpec {
  command: string;
  debianPackage: string;
  /** Environment variable that may name the executable instead of PATH. */
  env: string;
}

export const TILEMAKER: ToolSpec = { command: 'tilemaker', debianPackage: 'tilemaker', env: 'TILEBAKE_TILEMAKER' };
export const OSMIUM: ToolSpec = { command: 'osmium', debianPackage: 'osmium-tool', env: 'TILEBAKE_OSMIUM' };

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The executable for `tool` (its env variable, else the first on PATH), or a UserError naming the package. */
export async function findTool(tool: ToolSpec): Promise<string> {
  const override = process.env[tool.env];
  if (override) {
    if (await isExecutable(override)) return override;
    throw new UserError(`${tool.env}=${override}: not an executable file (it should be ${tool.command} from Debian's ${tool.debianPackage} package)`);
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && (await isExecutable(join(dir, tool.command)))) return join(dir, tool.command);
  }
  throw new UserError(
    `${tool.command} not found on PATH (needed to build tiles from .osm.pbf): install Debian's ${tool.debianPackage} package (\`sudo apt-get install ${tool.debianPackage}\`, or \`make setup\`), or set ${tool.env} to its path`,
  );
}

/** A tool run that did not succeed: exit code or signal, and the last lines it wrote to stderr. */
export class ToolError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly stderr: string,
  ) {
    super(`${command} ${signal ? `killed by ${signal}` : `exited with code ${code}`}${stderr ? `: ${lastLine(stderr)}` : ''}`);
    this.name = 'ToolError';
  }
}

/** The last non-empty line of a program's output. */
export function lastLine(text: string): string {
  const lines = text.split(/[\r\n]+/).map((l) => l.trim()).filter(Boolean);
  return lines[lines.length - 1] ?? '';
}

/** Bytes of stderr kept for error messages. */
const STDERR_KEEP = 16 * 1024;

/** Options of `runTool`. */
export interface RunOptions {
  /** Called with each line of stdout (lines end at "\n" or "\r": tilemaker redraws its progress with "\r"). */
  onLine?: (line: string) => void;
  /** File the child's pid is appended to, so a later run can kill it if this process dies first. */
  pidFile?: string;
  /** Environment variables set for the child besides this process's. */
  env?: Record<string, string>;
}

/** Run `path args…`; resolves with stdout when it exits 0, rejects with a ToolError otherwise. */
export async function runTool(path: string, args: string[], opts: RunOptions = {}): Promise<string> {
  const child = spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}) });
  let stdout = '';
  let stderr = '';
  let pending = '';
  // Every listener is attached before the first await: a quick program can exit meanwhile.
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (!opts.onLine) {
      stdout += chunk;
      return;
    }
    pending += chunk;
    const parts = pending.split(/[\r\n]/);
    pending = parts.pop() ?? '';
    for (const line of parts) if (line.trim()) opts.onLine(line);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  const done = new Promise<string>((resolve, reject) => {
    child.once('error', (e) => reject(e));
    child.once('close', (code, signal) => {
      if (pending.trim()) opts.onLine?.(pending);
      if (code === 0) resolve(stdout);
      else reject(new ToolError(path, code, signal, stderr));
    });
  });
  if (opts.pidFile && child.pid !== undefined) {
    // A program that fails at once (osmium on a file it cannot read) rejects `done` while the pid is
    // written: handled here, or Node.js ends the process on an unhandled rejection; awaited below.
    done.catch(() => undefined);
    try {
      await appendFile(opts.pidFile, `${child.pid}\n`);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
  }
  return await done;
}

/**
 * Kill the programs a previous run recorded in `pidFile` that are still running with `marker` (its
 * work folder) on their command line: a SIGKILLed build leaves its tilemaker running otherwise.
 */
export async function killLeftovers(pidFile: string, marker: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(pidFile, 'utf8');
  } catch {
    return;
  }
  for (const pid of text.split('\n').map(Number).filter((n) => Number.isInteger(n) && n > 0)) {
    if (!commandLine(pid)?.split('\0').join(' ').includes(marker)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already, or not ours.
    }
  }
}
