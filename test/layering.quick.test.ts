// The source tree's layering: no import cycles, and every import points down the stack the README
// draws:
//
//   bin ─▶ cli ─▶ pipeline ──────────────┐
//            ├──▶ export ─▶ static-server ┼─▶ workers ─▶ lib
//            └──▶ static-server ──────────┘
//
// cli/ is the only folder that imports both the pipeline and the server; deploy/ (engine definitions)
// reads the pipeline's exit codes; nothing shipped imports deploy/, test/ or bench/.
import path from 'node:path';
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, importSpecifiers, layerOf } from './import-graph.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Each source folder and the folders it may import (its own aside). */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  bin: ['cli'],
  cli: ['pipeline', 'export', 'static-server', 'workers', 'lib'],
  pipeline: ['workers', 'lib'],
  export: ['static-server', 'workers', 'lib'],
  'static-server': ['workers', 'lib'],
  workers: ['lib'],
  lib: [],
  deploy: ['pipeline', 'lib'],
};
const LAYERS = Object.keys(ALLOWED).filter((l) => l !== 'deploy');
/** Shipped code: none of it may import deploy/ or test/. */
const SHIPPED = LAYERS;
/** Top-level folders that hold no shipped TypeScript of a layer. */
const NOT_LAYERS = new Set(['bench', 'data', 'docs', 'node_modules', 'dist', 'build', 'scripts', 'test', 'out']);

const graph = importGraph(ROOT, [...SHIPPED, 'deploy']);

/** "file -> target" for each import of a file in `from` layers whose target lies in `to` layers. */
function edgesInto(from: string[], to: string[]): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (!from.includes(layerOf(file))) continue;
    for (const t of targets) if (to.includes(layerOf(t))) out.push(`${file} -> ${t}`);
  }
  return out;
}

describe('import graph', () => {
  it('reads static, type-only, re-exported and dynamic imports, not comments', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export { c } from './c.ts';",
      "export * from './d.ts';",
      "import './side-effect.ts';",
      "const e = await import('./e.ts');",
      "// import { x } from './commented.ts';",
      "/* import { y } from './block.ts'; */",
      "const s = \"import { z } from './string.ts'\";",
    ].join('\n');
    expect(importSpecifiers(text).sort()).toEqual(['../b.ts', './a.ts', './c.ts', './d.ts', './e.ts', './side-effect.ts']);
  });

  it('finds cycles, including a file importing itself, and nothing in an acyclic graph', () => {
    const cyclic = new Map([
      ['lib/a.ts', ['lib/b.ts']],
      ['lib/b.ts', ['lib/c.ts']],
      ['lib/c.ts', ['lib/a.ts']],
      ['lib/d.ts', ['lib/d.ts']],
      ['lib/e.ts', ['lib/a.ts']],
    ]);
    expect(importCycles(cyclic).map((c) => c.join(' '))).toEqual(['lib/a.ts lib/b.ts lib/c.ts', 'lib/d.ts']);
    expect(importCycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([]);
  });

  it('covers the source tree', () => {
    for (const layer of LAYERS) expect([...graph.keys()].some((f) => layerOf(f) === layer), layer).toBe(true);
    // A known edge, so a resolver that silently finds nothing fails here.
    expect(graph.get(path.join('lib', 'elevation', 'reader.ts'))).toContain(path.join('lib', 'elevation', 'grid-sample.ts'));
  });
});

describe('layering', () => {
  it('has no import cycle', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('every import points down the stack (cli -> pipeline, export, static-server -> workers -> lib)', () => {
    const up: string[] = [];
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      for (const t of targets) {
        const to = layerOf(t);
        if (to !== from && !(ALLOWED[from] ?? []).includes(to)) up.push(`${file} -> ${t}`);
      }
    }
    expect(up).toEqual([]);
  });

  it('the pipeline and the server never import each other; only cli/ imports both', () => {
    expect(edgesInto(['pipeline'], ['static-server', 'export', 'cli'])).toEqual([]);
    expect(edgesInto(['static-server'], ['pipeline', 'export', 'cli'])).toEqual([]);
    expect(edgesInto(['export'], ['pipeline'])).toEqual([]);
    const both = [...new Set([...graph.keys()].map(layerOf))].filter((l) => edgesInto([l], ['pipeline']).length > 0 && edgesInto([l], ['static-server']).length > 0);
    expect(both).toEqual(['cli']);
  });

  it('no shipped code imports deploy/, test/ or bench/', () => {
    expect(edgesInto(SHIPPED, ['deploy', 'test', 'bench'])).toEqual([]);
  });

  it('every top-level folder with TypeScript is a layer of the stack', () => {
    const folders = readdirSync(ROOT).filter((f) => !f.startsWith('.') && !NOT_LAYERS.has(f) && statSync(path.join(ROOT, f)).isDirectory());
    const withTs = folders.filter((f) => [...graph.keys()].some((k) => layerOf(k) === f) || readdirSync(path.join(ROOT, f), { recursive: true }).some((n) => String(n).endsWith('.ts')));
    expect(withTs.filter((f) => !(f in ALLOWED))).toEqual([]);
  });
});
