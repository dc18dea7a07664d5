/**
 * lib/code-cache.mjs: packages' CommonJS modules compile from a V8 code cache written by an earlier
 * run. Each case runs a fresh Node process (its own module loader) that installs the cache and
 * requires modules of a temp `node_modules`, and checks what they export and what the cache did.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test } from 'vitest';
import { codeCacheDir, codeCacheFile, importCalls } from '../lib/code-cache.mjs';
import { tempDir as newTempDir } from './render-helpers.ts';

const exec = promisify(execFile);
const HOOK = resolve(import.meta.dirname, '../lib/code-cache.mjs');
const temps: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const d = await newTempDir(prefix);
  temps.push(d);
  return d;
}
afterAll(() => Promise.all(temps.map((d) => rm(d, { recursive: true, force: true }))));

/** A package `pkg` in `root/node_modules` whose index.js is `source`. */
async function writePackage(root: string, pkg: string, source: string, extra: Record<string, string> = {}): Promise<string> {
  const dir = join(root, 'node_modules', pkg);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: pkg, main: 'index.js' }));
  await writeFile(join(dir, 'index.js'), source);
  for (const [name, text] of Object.entries(extra)) await writeFile(join(dir, name), text);
  return join(dir, 'index.js');
}

/** In a new Node process: install the cache with TILEBAKE_CODE_CACHE=`setting`, require `pkgs` from `root`; resolves with their JSON exports and the cache's stats. */
async function run(root: string, setting: string, pkgs: string[]): Promise<{ exports: unknown[]; stats: Record<string, number>; dir?: string }> {
  const script = `
    const { enableCodeCache, codeCacheStats } = await import(${JSON.stringify(HOOK)});
    const dir = enableCodeCache();
    const { createRequire } = await import('node:module');
    const req = createRequire(${JSON.stringify(join(root, 'index.js'))});
    const exports = ${JSON.stringify(pkgs)}.map((p) => req(p));
    process.on('exit', () => console.log(JSON.stringify({ exports, stats: codeCacheStats, dir })));
  `;
  const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TILEBAKE_CODE_CACHE: setting } });
  return JSON.parse(stdout) as { exports: unknown[]; stats: Record<string, number>; dir?: string };
}

const MODULE = `
  const helper = require('./helper.js');
  let calls = 0;
  function sum(a) { calls++; return a.reduce((x, y) => x + y, 0); }
  module.exports = {
    sum: sum([1, 2, 3]),
    helper: helper.name,
    dirname: __dirname.endsWith('node_modules/a'),
    filename: __filename.endsWith('a/index.js'),
    resolved: require.resolve('./helper.js') === __dirname + '/helper.js',
    cached: require.cache[__filename] === module,
    thisIsExports: this === exports,
    stack: new Error('x').stack.split(String.fromCharCode(10))[1].includes(__filename + ':'),
    calls,
  };
`;

describe('V8 code cache for CommonJS packages', () => {
  test('a second run compiles from the cache written by the first, with the same exports and require', async () => {
    const root = await tempDir('code-cache');
    const cache = join(root, 'cache');
    const index = await writePackage(root, 'a', MODULE, { 'helper.js': 'module.exports = { name: "helper" };' });
    const expected = { sum: 6, helper: 'helper', dirname: true, filename: true, resolved: true, cached: true, thisIsExports: true, stack: true, calls: 1 };

    const first = await run(root, cache, ['a']);
    expect(first.exports).toEqual([expected]);
    expect(first.stats).toMatchObject({ hits: 0, misses: 2, written: 2 });
    expect(first.dir).toBe(join(cache, `node-${process.version}-${process.arch}`));
    const file = codeCacheFile(first.dir!, await readFile(index, 'utf8'));
    expect((await readFile(file)).length).toBeGreaterThan(0);
    // Written to a temp name and renamed: nothing else is left.
    expect((await readdir(first.dir!)).sort()).toHaveLength(2);

    const second = await run(root, cache, ['a']);
    expect(second.exports).toEqual([expected]);
    expect(second.stats).toMatchObject({ hits: 2, misses: 0, rejected: 0, written: 0 });
  });

  test('a module with import() is left to Node (cached data would lose its loader on Node 20)', async () => {
    const root = await tempDir('code-cache');
    const cache = join(root, 'cache');
    await writePackage(root, 'g', 'module.exports = import("./esm.mjs").then((m) => { process.on("exit", () => console.error(m.value)); });', { 'esm.mjs': 'export const value = "from-esm";' });
    for (let i = 0; i < 2; i++) {
      const script = `const { enableCodeCache, codeCacheStats } = await import(${JSON.stringify(HOOK)}); enableCodeCache(); const { createRequire } = await import('node:module'); await createRequire(${JSON.stringify(join(root, 'index.js'))})('g'); process.on('exit', () => console.log(JSON.stringify(codeCacheStats)));`;
      const { stdout, stderr } = await exec(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TILEBAKE_CODE_CACHE: cache } });
      expect(stderr.trim()).toBe('from-esm');
      expect(JSON.parse(stdout)).toMatchObject({ hits: 0, misses: 0, skipped: 1 });
    }
  });

  test('import() calls are found outside comments', () => {
    const source = ['/** @param {import("./a.js").T} x */', '// import("b")', ' * @returns {typeof import("c")}', 'const d = await import ("d");', 'f(x => import(x)); g(import(y));'].join('\n');
    expect(importCalls(source)).toEqual(['const d = await import ("d");', 'f(x => import(x)); g(import(y));']);
    expect(importCalls('module.exports = { imported: 1 }; reimport(1);')).toEqual([]);
  });

  test("playwright-core's import() calls are the ones lib/code-cache.mjs lets through (none tilebake reaches)", async () => {
    const lib = join(import.meta.dirname, '../node_modules/playwright-core/lib');
    const sites: string[] = [];
    // The Node side: lib/*.js and lib/*/*.js (lib/vite/ holds the trace viewer's browser assets).
    const files = (await readdir(lib, { recursive: true })).filter((n) => n.endsWith('.js') && !n.startsWith('vite/')).sort();
    expect(files).toContain('coreBundle.js');
    for (const f of files) {
      for (const line of importCalls(await readFile(join(lib, f), 'utf8'))) sites.push(`${f}: ${line}`);
    }
    // A new one after an upgrade: check that tilebake never runs it, or drop playwright-core from IMPORT_UNUSED.
    expect(sites).toEqual([
      "coreBundle.js: const loadVite = new Function('return import(\"vite\")');",
      'utilsBundle.js: kerberos = await import("kerberos");',
      'utilsBundle.js: import("node:crypto").then((m) => m.webcrypto);',
    ]);
  });

  test('a changed module is compiled from its new source, not the old data', async () => {
    const root = await tempDir('code-cache');
    const cache = join(root, 'cache');
    await writePackage(root, 'b', 'module.exports = 1 + 1;');
    expect((await run(root, cache, ['b'])).exports).toEqual([2]);
    // Same length, other source.
    await writePackage(root, 'b', 'module.exports = 2 + 2;');
    const changed = await run(root, cache, ['b']);
    expect(changed.exports).toEqual([4]);
    expect(changed.stats).toMatchObject({ hits: 0, misses: 1, written: 1 });
  });

  test('data V8 rejects is written again', async () => {
    const root = await tempDir('code-cache');
    const cache = join(root, 'cache');
    const index = await writePackage(root, 'c', 'module.exports = "c";');
    const dir = codeCacheDir({ TILEBAKE_CODE_CACHE: cache })!;
    await mkdir(dir, { recursive: true });
    await writeFile(codeCacheFile(dir, await readFile(index, 'utf8')), 'not V8 data');
    const r = await run(root, cache, ['c']);
    expect(r.exports).toEqual(['c']);
    expect(r.stats).toMatchObject({ hits: 0, rejected: 1, written: 1 });
    expect((await run(root, cache, ['c'])).stats).toMatchObject({ hits: 1, rejected: 0 });
  });

  test('off, an unwritable folder and ES module syntax leave loading to Node', async () => {
    const root = await tempDir('code-cache');
    await writePackage(root, 'd', 'module.exports = "d";');
    await writePackage(root, 'e', 'export default "e";');
    const off = await run(root, 'off', ['d']);
    expect(off).toEqual({ exports: ['d'], stats: { hits: 0, misses: 0, rejected: 0, written: 0, skipped: 0 } });
    expect(codeCacheDir({ TILEBAKE_CODE_CACHE: '0' })).toBeUndefined();
    expect(codeCacheDir({ XDG_CACHE_HOME: '/x' })).toBe(`/x/tilebake/code-cache/node-${process.version}-${process.arch}`);

    // A folder below a file cannot be made: the modules load all the same.
    await writeFile(join(root, 'file'), '');
    const unwritable = await run(root, join(root, 'file', 'cache'), ['d']);
    expect(unwritable.exports).toEqual(['d']);
    expect(unwritable.stats).toMatchObject({ misses: 1, written: 0 });

    // ES module syntax in a .js file without "type": Node 20 loads it as an ES module itself.
    const esm = await run(root, join(root, 'cache'), ['e']);
    expect(esm.exports).toEqual([expect.objectContaining({ default: 'e' })]);
    expect(esm.stats).toMatchObject({ hits: 0, misses: 0, skipped: 1 });
  });

  test('processes writing the same cache at once leave whole files', async () => {
    const root = await tempDir('code-cache');
    const cache = join(root, 'cache');
    // A module large enough that writes take a while.
    const body = Array.from({ length: 2000 }, (_, i) => `function f${i}(x) { return x * ${i} + ${i % 7}; }`).join('\n');
    await writePackage(root, 'f', `${body}\nmodule.exports = f1999(2);`);
    const runs = await Promise.all(Array.from({ length: 4 }, () => run(root, cache, ['f'])));
    for (const r of runs) expect(r.exports).toEqual([1999 * 2 + (1999 % 7)]);
    const dir = codeCacheDir({ TILEBAKE_CODE_CACHE: cache })!;
    expect(await readdir(dir)).toHaveLength(1);
    const after = await run(root, cache, ['f']);
    expect(after.stats).toMatchObject({ hits: 1, rejected: 0 });
  });
});
