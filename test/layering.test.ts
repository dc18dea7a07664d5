// The source tree's layering: no import cycles, and dependencies that point one way
// (lib <- pipeline / workers / static-server <- deploy; static-server never imports pipeline).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, importSpecifiers, layerOf } from './import-graph.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LAYERS = ['lib', 'pipeline', 'workers', 'static-server'];
/** Shipped code: none of it may import deploy/ or test/. */
const SHIPPED = [...LAYERS, 'bin'];

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
  it('has no import cycle in lib/, pipeline/, workers/, static-server/', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('lib/ imports none of the other layers', () => {
    expect(edgesInto(['lib'], ['pipeline', 'workers', 'static-server', 'deploy', 'test', 'bench'])).toEqual([]);
  });

  it('static-server/ never imports pipeline/', () => {
    expect(edgesInto(['static-server'], ['pipeline'])).toEqual([]);
  });

  it('no shipped code imports deploy/ or test/', () => {
    expect(edgesInto(SHIPPED, ['deploy', 'test'])).toEqual([]);
  });

  it('the layers depend on each other one way (no cycle between folders)', () => {
    const layerGraph = new Map<string, string[]>(LAYERS.map((l) => [l, []]));
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      if (!LAYERS.includes(from)) continue;
      for (const t of targets) {
        const to = layerOf(t);
        if (to !== from && LAYERS.includes(to) && !layerGraph.get(from)!.includes(to)) layerGraph.get(from)!.push(to);
      }
    }
    expect(importCycles(layerGraph)).toEqual([]);
  });
});
