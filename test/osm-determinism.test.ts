/**
 * Deterministic tiles from OSM: two builds of the same extract are byte-identical (tilemaker's own
 * output is not: its threads order features differently run to run), and editing one way changes
 * only the tiles that way lies in. Incremental rebuilds rely on both. The edited extract and the
 * unedited one it is compared with both went through OPL and back (neither keeps the sample's header
 * bbox, both take their bounds from their data).
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, test } from 'vitest';
import { tileIdToZxy } from '../lib/pmtiles/index.ts';
import { tileBounds, type BBox } from '../lib/tile-math.ts';
import { packVectorTiles } from '../pipeline/vector/stage.ts';
import { MONACO_PBF, wayCoords } from './osm-helpers.ts';
import { archiveTiles, tempDir } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;
const run = promisify(execFile);
/** The edited way: Rue des Iris, a residential street in Monaco's north, made a named secondary road. */
const WAY = 39838265;
/** Fraction of a tile around it that features may reach into (tilemaker clips with a small buffer). */
const BUFFER = 1 / 16;

let dir: string;
const archives: Record<'a' | 'b' | 'edited', string> = { a: '', b: '', edited: '' };

/** Tiles at zoom `z` within BUFFER of the box. */
function nearby(box: BBox, z: number, x: number, y: number): boolean {
  const [w, s, e, n] = tileBounds(z, x, y);
  const dx = (e - w) * BUFFER;
  const dy = (n - s) * BUFFER;
  return w - dx <= box[2] && e + dx >= box[0] && s - dy <= box[3] && n + dy >= box[1];
}

describe.sequential('deterministic tiles from OSM', () => {
  beforeAll(async () => {
    dir = await tempDir('osm-determinism');
    // The edit: OPL out, one way's tags changed, PBF back (osmium keeps every other object as it was).
    const opl = join(dir, 'monaco.opl');
    await run('osmium', ['cat', '-o', opl, MONACO_PBF]);
    const unedited = join(dir, 'unedited.osm.pbf');
    await run('osmium', ['cat', '-o', unedited, opl]);
    const lines = (await readFile(opl, 'utf8')).split('\n');
    const k = lines.findIndex((l) => l.startsWith(`w${WAY} `));
    expect(lines[k]).toContain('highway=residential');
    lines[k] = lines[k].replace('highway=residential', 'highway=secondary').replace('name=Rue%20%des%20%Iris', 'name=Boulevard%20%des%20%Iris');
    const editedOpl = join(dir, 'edited.opl');
    await writeFile(editedOpl, lines.join('\n'));
    const edited = join(dir, 'edited.osm.pbf');
    await run('osmium', ['cat', '-o', edited, editedOpl]);
    for (const [key, input] of [['a', unedited], ['b', unedited], ['edited', edited]] as const) {
      archives[key] = join(dir, `${key}.pmtiles`);
      await packVectorTiles(input, archives[key]);
    }
    // Three builds of the extract, each given what the other OSM tests give their one build.
  }, 3 * LONG);

  test('two builds of the same extract are byte-identical', async () => {
    const [a, b] = await Promise.all([readFile(archives.a), readFile(archives.b)]);
    expect(a.length).toBeGreaterThan(100_000);
    expect(a.equals(b)).toBe(true);
  });

  test('one edited way changes only the tiles it lies in, at the zooms it shows', async () => {
    const before = await archiveTiles(archives.a);
    const after = await archiveTiles(archives.edited);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    const coords = (await wayCoords(MONACO_PBF, [WAY])).get(WAY)!;
    const box: BBox = [Math.min(...coords.map((c) => c[0])), Math.min(...coords.map((c) => c[1])), Math.max(...coords.map((c) => c[0])), Math.max(...coords.map((c) => c[1]))];
    const changed = [...before.keys()].filter((id) => before.get(id) !== after.get(id)).map((id) => tileIdToZxy(Number(id)));
    for (const [z, x, y] of changed) expect(nearby(box, z, x, y), `changed tile ${z}/${x}/${y} is not near the way`).toBe(true);
    // A secondary road is drawn from z9: every zoom from there changed, none below.
    const zooms = new Set(changed.map(([z]) => z));
    expect([...zooms].sort((p, q) => p - q)).toEqual([9, 10, 11, 12, 13, 14]);
    // At z14 the way lies in one tile of the 90 or so over the extract's data.
    expect(before.size).toBeGreaterThan(100);
    expect(changed.filter(([z]) => z === 14)).toHaveLength(1);
  });
});
