// The source tree's layering: no import cycles, and every import points down the stack the README
// draws:
//
//   bin ─▶ cli ─▶ pipeline ──────────────┐
//            ├──▶ export ─▶ static-server ┼─▶ workers ─▶ lib
//            └──▶ static-server ──────────┘
//
// cli/ is the only folder that imports both the pipeline and the server; deploy/ (engine definitions)
// reads the pipeline's exit codes; nothing shipped imports deploy/, test/ or bench/. Inside a layer,
// its folders follow the order written in INSIDE, and no folder or top-level file of a layer is in an
// import cycle with another. bench/ may use test/'s fixtures and helpers (the same real components,
// started the same way; the measuring helpers both need are test/fixtures/measure.ts); those never
// import bench/ (only a test file may, to test a bench helper), and nothing imports a test file: so
// no file of bench/ and test/ is in an import cycle.
import path from 'node:path';
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, importsAgainstOrder, importSpecifiers, layerOf, unitGraph, unitOf } from './import-graph.ts';

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

/**
 * The folders inside each layer, top first: an import between two of them points down this list. A
 * path below a folder (`sources/index.ts`) is a unit of its own, placed apart from its folder. Files at
 * a layer's top are units too, held to no place in the list but to no cycle with anything.
 */
const INSIDE: Readonly<Record<string, readonly string[]>> = {
  pipeline: [
    'run', // distributed builds: plan, shard and publish (pipeline/build.ts for the plan's stages)
    'update', // nightly updates: replication diffs, then a build
    'stages', // each stage's record of what it reads and writes (pipeline/stage.ts)
    'imagery', // the imagery stage: images warped into raster tiles (through elevation/'s tile jobs, vector/'s packing)
    'elevation', // the elevation stage (its tile archives are written through render/'s journal)
    'vector', // the vector stage: inputs into PMTiles (and MLT), patched on updates
    'search', // a tileset's search index beside its tiles, from the OSM extract (through osm/'s tools and change sets) or a GIS source's layers (sources/)
    'render', // the render stage: every style × zoom × scale × format through the Chromium pool
    'glyphs', // the font stacks' glyph ranges
    'sources/index.ts', // what an input is, opened as a TileSource: an OSM extract through osm/source.ts
    'osm', // the OpenStreetMap source: tilemaker, osmium, the sea and the world; reads MBTiles through sources/
    'sources', // tile archives and folders read as they are (MBTiles, PMTiles, z/x/y)
    'config', // the build config, parsed and checked
  ],
  'static-server': [
    'routes', // one module per route family
    'keys', // keys, scopes, rate limits and usage
    'packs', // the offline packs' plans
    'search', // the search indexes a version serves (a local copy of one on object storage), the query parameters
    'overzoom', // raster zooms above the baked ones: upscaled (through static-map/) or rendered
    'static-map', // static images: camera, decoded tiles, composition, overlays
    'styles', // the documents of styles: raster TileJSON, WMTS capabilities, label language
    'preview', // the preview page (browser files)
  ],
  lib: ['packs', 'search', 'pmtiles', 'elevation', 'glyphs'],
  workers: ['render-host', 'page'],
  cli: ['commands'],
};

const graph = importGraph(ROOT, [...SHIPPED, 'deploy']);
/** The tests' and benchmarks' own imports (their imports of shipped code are not checked here). */
const harness = importGraph(ROOT, ['test', 'bench']);

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

  it('reads the units inside a layer, and finds imports against their order', () => {
    expect(unitOf('pipeline/build.ts')).toBe('pipeline/build.ts');
    expect(unitOf('pipeline/osm/cut.ts')).toBe('pipeline/osm');
    expect(unitOf('pipeline/sources/index.ts', new Set(['pipeline/sources/index.ts']))).toBe('pipeline/sources/index.ts');
    const g = new Map([
      ['x/top.ts', ['x/a/one.ts']],
      ['x/a/one.ts', ['x/b/two.ts', 'lib/z.ts']],
      ['x/b/two.ts', ['x/a/three.ts', 'x/b/mid.ts']],
      ['x/b/mid.ts', []],
      ['x/b/apart.ts', ['x/a/one.ts']],
    ]);
    expect(importsAgainstOrder(g, 'x', ['a', 'b'])).toEqual(['x/b/two.ts -> x/a/three.ts', 'x/b/apart.ts -> x/a/one.ts']);
    expect(importsAgainstOrder(g, 'x', ['b/apart.ts', 'a', 'b'])).toEqual(['x/b/two.ts -> x/a/three.ts']);
    expect(importCycles(unitGraph(g, 'x'))).toEqual([['x/a', 'x/b']]);
    expect(unitGraph(g, 'x').get('x/top.ts')).toEqual(['x/a']);
  });

  it('inside each layer, imports between its folders follow their order (INSIDE), and every folder is placed', () => {
    for (const [layer, order] of Object.entries(INSIDE)) {
      expect(importsAgainstOrder(graph, layer, order), layer).toEqual([]);
    }
    for (const layer of LAYERS) {
      const folders = readdirSync(path.join(ROOT, layer), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
      const withSource = folders.filter((f) => [...graph.keys()].some((k) => k.startsWith(`${layer}/${f}/`)));
      expect(withSource.filter((f) => !(INSIDE[layer] ?? []).includes(f)), layer).toEqual([]);
    }
  });

  it('inside each layer, no folder or top-level file is in an import cycle with another', () => {
    for (const layer of LAYERS) {
      const own = new Set((INSIDE[layer] ?? []).filter((u) => u.includes('/')).map((u) => `${layer}/${u}`));
      expect(importCycles(unitGraph(graph, layer, own)), layer).toEqual([]);
    }
  });

  it('bench/ may import test/ fixtures and helpers, which never import bench/ (a test file may); nothing imports a test file', () => {
    const edges = [...harness].flatMap(([file, targets]) => targets.map((t) => [file, t] as const));
    const isTestFile = (f: string) => f.endsWith('.test.ts');
    expect(edges.filter(([f, t]) => layerOf(f) === 'test' && !isTestFile(f) && layerOf(t) === 'bench').map((e) => e.join(' -> '))).toEqual([]);
    expect(edges.filter(([, t]) => isTestFile(t)).map((e) => e.join(' -> '))).toEqual([]);
    expect(importCycles(harness)).toEqual([]);
    // The rule has something to hold: benchmarks do start the tests' components.
    expect(edges.some(([f, t]) => layerOf(f) === 'bench' && t.startsWith('test/fixtures/'))).toBe(true);
  });

  it('every top-level folder with TypeScript is a layer of the stack', () => {
    const folders = readdirSync(ROOT).filter((f) => !f.startsWith('.') && !NOT_LAYERS.has(f) && statSync(path.join(ROOT, f)).isDirectory());
    const withTs = folders.filter((f) => [...graph.keys()].some((k) => layerOf(k) === f) || readdirSync(path.join(ROOT, f), { recursive: true }).some((n) => String(n).endsWith('.ts')));
    expect(withTs.filter((f) => !(f in ALLOWED))).toEqual([]);
  });
});
