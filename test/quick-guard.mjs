/**
 * The quick tier's guard (`make check`, the vitest project `quick`): loaded with `--import` into every
 * test process of the tier, into its worker threads (they inherit execArgv) and, through NODE_OPTIONS,
 * into every Node.js process those start (the CLI). Starting a browser, a daemon or tilemaker there
 * throws, and is written to the file named by TILEBAKE_QUICK_VIOLATIONS, which the tier's global
 * teardown (test/quick-teardown.ts) turns into a failed run even when a test swallows the error.
 * Such a test is an ordinary `*.test.ts` file of the whole suite (DEVELOPERS.md, Tests).
 */
import childProcess from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** Programs a quick test must not start: browsers, servers and daemons, the OSM tile generator. */
const FORBIDDEN = /^(chromium|chromium-browser|chromium-headless-shell|chrome|headless_shell|google-chrome|tilemaker|nginx|redis-server|memcached|postgres|postmaster|pg_ctl|initdb|slurmctld|slurmd|sbatch|srun|munged|swift-[a-z-]+)$/;
/** Shells whose `-c` script is checked word by word. */
const SHELLS = new Set(['sh', 'bash', 'dash']);

const self = fileURLToPath(import.meta.url);
const flag = `--import=${self}`;
if (!(process.env.NODE_OPTIONS ?? '').includes(flag)) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${flag}`.trim();

/** The forbidden program `command args` would start, if any. */
function forbiddenIn(command, args) {
  const name = basename(String(command));
  if (FORBIDDEN.test(name)) return name;
  const list = Array.isArray(args) ? args.map(String) : [];
  if (SHELLS.has(name) || (typeof command === 'string' && / /.test(command) && list.length === 0)) {
    const script = SHELLS.has(name) ? list.join(' ') : String(command);
    for (const word of script.split(/[\s;&|()'"`]+/)) if (FORBIDDEN.test(basename(word))) return basename(word);
  }
  return undefined;
}

function refuse(program, command) {
  const message = `quick tier: a test started ${program} (${String(command)}); a test that starts a browser, a daemon or tilemaker is not a quick one: name its file *.test.ts, not *.quick.test.ts`;
  const file = process.env.TILEBAKE_QUICK_VIOLATIONS;
  // In a vitest worker, the test file; in a process a test started, its command line.
  const where = globalThis.__vitest_worker__?.filepath ?? process.argv.slice(1, 4).join(' ');
  if (file) appendFileSync(file, `${message} [in ${where}]\n`);
  throw new Error(message);
}

/** `original` with the check in front, for direct calls and `util.promisify` (execFile and exec have their own promisified form). */
function guard(original) {
  const check = (command, rest) => {
    const program = forbiddenIn(command, Array.isArray(rest[0]) ? rest[0] : []);
    if (program) refuse(program, command);
  };
  const guarded = function (command, ...rest) {
    check(command, rest);
    return original.call(this, command, ...rest);
  };
  const custom = original[promisify.custom];
  if (custom) {
    guarded[promisify.custom] = function (command, ...rest) {
      check(command, rest);
      return custom.call(this, command, ...rest);
    };
  }
  return guarded;
}

for (const fn of ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync']) childProcess[fn] = guard(childProcess[fn]);
syncBuiltinESMExports();
