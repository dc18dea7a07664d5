// A V8 code cache for the CommonJS modules of packages (node_modules), for Node.js 20, which has no
// `module.enableCompileCache` (Node 22). In plain JavaScript: bin/tilebake.js and
// workers/render-worker.mjs install it before they load anything it should cover (playwright-core's
// 7 MB of bundles in every render worker thread; fastify, sharp, yargs... in the main thread).
//
// Module.prototype._compile is wrapped (as the npm package v8-compile-cache does): a module is compiled
// with vm.Script and the cached data of an earlier run, if any. A module compiled without usable data
// is remembered, and its data is written when the process exits (createCachedData then holds the
// functions the run compiled lazily too), or `writeAfterMs` after the first such module in a thread
// that may end without an exit event (a Piscina worker). Files are named by a hash of the module's
// source, in a folder per Node version and architecture: an upgraded package or Node never reads stale
// data (V8 rejects data of other flags itself). Each file is written to a temporary name and renamed,
// so concurrent processes and threads never read half a file. ES module syntax, source maps and an
// unwritable folder are left to Node's own loader, and so is a module that calls `import(`: on
// Node 20 (V8 11.3) a script compiled from cached data loses the loader's options, and its import()
// throws ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING. Except playwright-core, whose import() calls load
// what tilebake never uses (test/code-cache.test.ts pins them).
//
// TILEBAKE_CODE_CACHE: unset, the folder `$XDG_CACHE_HOME/tilebake/code-cache` (`~/.cache/...`);
// `off` or `0`, no cache; any other value, that folder. Figures: docs/distributed.md "Node's share of a shard".
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import vm from 'node:vm';
import { threadId } from 'node:worker_threads';

const NODE_MODULES = `${sep}node_modules${sep}`;
/**
 * Packages cached although their source has `import(`: playwright-core's bundles import vite (component
 * tests, through `new Function`), kerberos (proxy authentication) and a webcrypto fallback for Node < 19.
 */
const IMPORT_UNUSED = [`${NODE_MODULES}playwright-core${sep}`];

/**
 * The lines of `content` that call `import(` outside comments (JSDoc types such as
 * `{import('x').T}` are no calls), trimmed.
 */
export function importCalls(content) {
  const lines = [];
  for (const m of content.matchAll(/\bimport\s*\(/g)) {
    const start = content.lastIndexOf('\n', m.index) + 1;
    const end = content.indexOf('\n', m.index);
    const line = content.slice(start, end === -1 ? undefined : end).trim();
    if (/^(\*|\/\/|\/\*)/.test(line)) continue;
    if (lines.at(-1) !== line) lines.push(line);
  }
  return lines;
}

/** The folder for this Node version's cached data, or undefined when the cache is off. */
export function codeCacheDir(env = process.env) {
  const setting = env.TILEBAKE_CODE_CACHE;
  if (setting === 'off' || setting === '0') return undefined;
  const base = setting || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tilebake', 'code-cache');
  return join(base, `node-${process.version}-${process.arch}`);
}

/** The file of `dir` holding the cached data of a module whose source is `content`. */
export function codeCacheFile(dir, content) {
  return join(dir, createHash('sha256').update(content).digest('hex').slice(0, 40));
}

/** What the cache did in this thread, for tests and figures. */
export const codeCacheStats = { hits: 0, misses: 0, rejected: 0, written: 0, skipped: 0 };

let installed = false;

/**
 * Install the cache in this thread (once; every thread has its own module loader). Returns the folder
 * used, or undefined when off (TILEBAKE_CODE_CACHE=off, or source maps on: Node maps the stack traces
 * of the modules it compiles itself). `writeAfterMs`: also write the new data this long after the
 * first module that had none (for threads that may end without an exit event); by default only at exit,
 * when the data cannot slow the work down.
 */
export function enableCodeCache(dir = codeCacheDir(), { writeAfterMs } = {}) {
  if (installed || !dir || process.sourceMapsEnabled) return undefined;
  installed = true;
  let writable = true;
  /** Modules compiled without usable data: written by flush(). */
  let pending = [];
  let timer;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const now = pending;
    pending = [];
    if (!writable) return;
    try {
      mkdirSync(dir, { recursive: true });
      for (const { script, file } of now) {
        const tmp = `${file}.${process.pid}-${threadId}.tmp`;
        try {
          writeFileSync(tmp, script.createCachedData());
          renameSync(tmp, file);
          codeCacheStats.written++;
        } catch (e) {
          rmSync(tmp, { force: true });
          throw e;
        }
      }
    } catch {
      // Read-only or full: run without writing, as without a cache.
      writable = false;
    }
  };
  process.once('exit', flush);

  const compile = Module.prototype._compile;
  Module.prototype._compile = function cachedCompile(content, filename, format) {
    if (format === 'module' || !filename.includes(NODE_MODULES) || (!IMPORT_UNUSED.some((p) => filename.includes(p)) && importCalls(content).length > 0)) {
      codeCacheStats.skipped++;
      return compile.call(this, content, filename, format);
    }
    const file = codeCacheFile(dir, content);
    let cachedData;
    try {
      cachedData = readFileSync(file);
    } catch {
      // Not cached yet.
    }
    let script;
    try {
      script = new vm.Script(Module.wrap(content), { filename, cachedData });
    } catch {
      // ES module syntax in a .js file, a syntax error...: Node's loader handles and reports those.
      codeCacheStats.skipped++;
      return compile.call(this, content, filename, format);
    }
    if (cachedData && !script.cachedDataRejected) codeCacheStats.hits++;
    else {
      if (cachedData) codeCacheStats.rejected++;
      else codeCacheStats.misses++;
      if (writable) pending.push({ script, file });
      if (writeAfterMs !== undefined) timer ??= setTimeout(flush, writeAfterMs).unref();
    }
    const wrapper = script.runInThisContext({ displayErrors: true });
    return Reflect.apply(wrapper, this.exports, [this.exports, moduleRequire(this), this, filename, dirname(filename)]);
  };
  return dir;
}

/** The `require` a module's code gets, as Node makes it (lib/internal/modules/helpers.js makeRequireFunction). */
function moduleRequire(mod) {
  function require(id) {
    return mod.require(id);
  }
  const resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  resolve.paths = (request) => Module._resolveLookupPaths(request, mod);
  require.resolve = resolve;
  require.main = process.mainModule;
  require.extensions = Module._extensions;
  require.cache = Module._cache;
  return require;
}
