/**
 * Natural Earth's country labels and the countries on each side of a border at z0–6, against the
 * official OpenMapTiles tiles: Liechtenstein (the world's tiles, no build of the extract) and
 * Monaco (built from its extract), and osm-bright drawing the country labels at z3.
 */
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { VectorTile } from '@mapbox/vector-tile';
import { beforeAll, describe, expect, test } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { lonLatToTile, tileBounds, type BBox } from '../lib/tile-math.ts';
import { ADM0_SIDES_MINZOOM, countryRank } from '../pipeline/osm/natural-earth.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { tileBox } from '../pipeline/osm/source.ts';
import { buildMonacoVector, mbtilesTile, MONACO_HEADER_BBOX, MONACO_PBF, osmConfig, vectorTile, worldArchive } from './osm-helpers.ts';
import { compare, OSM_BRIGHT, readTile, rgb, SAMPLE, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 400_000;
const LIECHTENSTEIN_OMT = join(SAMPLE, '..', 'liechtenstein', 'liechtenstein_omt.mbtiles');
const MONACO_OMT = join(SAMPLE, 'monaco_omt.mbtiles');
/** Liechtenstein's extract's header bbox (as in its official tiles' metadata). */
const LIECHTENSTEIN_BBOX: BBox = [9.471078, 47.04774, 9.636217, 47.27128];
const VADUZ: [number, number] = [9.5209, 47.1410];
const MONACO: [number, number] = [7.4246, 43.7384];
/** Natural Earth's labelrank of these countries (data/naturalearth/ne_110m_admin_0_label_points.fgb). */
const NE_LABELRANK: Record<string, number> = { FR: 2, IT: 2, CH: 4, AT: 4 };

type Pt = [number, number];
/** Side of `p` relative to a line, in a y-up frame: > 0 left, < 0 right (the segment nearest to `p` decides). */
function side(line: Pt[], p: Pt): number {
  let best = Infinity;
  let sign = 0;
  for (let i = 1; i < line.length; i++) {
    const [a, b] = [line[i - 1], line[i]];
    const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
    const t = Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy || 1)));
    const d = Math.hypot(a[0] + t * dx - p[0], a[1] + t * dy - p[1]);
    if (d < best) [best, sign] = [d, Math.sign(dx * (p[1] - a[1]) - dy * (p[0] - a[0]))];
  }
  return sign;
}

/** Country borders' attributes and lines (tile coordinates, y flipped to point up) of a tile. */
function countryBorders(t: VectorTile | undefined): { p: Record<string, unknown>; lines: Pt[][] }[] {
  const l = t?.layers.boundary;
  const out: { p: Record<string, unknown>; lines: Pt[][] }[] = [];
  if (l) for (let i = 0; i < l.length; i++) {
    const f = l.feature(i);
    if (f.properties.admin_level === 2) out.push({ p: f.properties, lines: f.loadGeometry().map((r) => r.map((q): Pt => [q.x, -q.y])) });
  }
  return out;
}

/** Country label features of a tile. */
function countries(t: VectorTile | undefined): Record<string, unknown>[] {
  const l = t?.layers.place;
  const out: Record<string, unknown>[] = [];
  if (l) for (let i = 0; i < l.length; i++) if (l.feature(i).properties.class === 'country') out.push(l.feature(i).properties);
  return out;
}

/** The point's position in tile z/x/y's coordinates (y up, as `countryBorders`). */
function inTile(p: Pt, z: number, x: number, y: number, extent = 4096): Pt {
  const [w, s, e, n] = tileBounds(z, x, y);
  const my = (lat: number) => Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360));
  return [((p[0] - w) / (e - w)) * extent, -((my(n) - my(p[1])) / (my(n) - my(s))) * extent];
}

describe("Liechtenstein: the world's Natural Earth tiles against the official tiles", () => {
  let world: string;
  beforeAll(async () => {
    world = await worldArchive();
  }, LONG);

  test('z5–6 country borders name the countries on each side as the official tiles do; z0–4 borders name none', async () => {
    for (const z of [5, 6]) {
      const { x, y } = lonLatToTile(VADUZ[0], VADUZ[1], z);
      const official = countryBorders(mbtilesTile(LIECHTENSTEIN_OMT, z, x, y));
      // The official tiles (built from the extract alone) name Liechtenstein on one side of its borders.
      const officialCodes = new Set(official.flatMap(({ p }) => [p.adm0_l, p.adm0_r]).filter(Boolean));
      expect(officialCodes, `official z${z}`).toEqual(new Set(['LIE']));
      const ours = countryBorders(await vectorTile(world, z, x, y));
      expect(ours.length).toBeGreaterThan(5);
      for (const { p } of ours) {
        expect(p.adm0_l, `z${z}`).toMatch(/^[A-Z]{3}$/);
        expect(p.adm0_r, `z${z}`).toMatch(/^[A-Z]{3}$/);
      }
      // Liechtenstein's borders with Switzerland and Austria, Vaduz on the side they name LIE.
      const lie = ours.filter(({ p }) => p.adm0_l === 'LIE' || p.adm0_r === 'LIE');
      expect(lie.map(({ p }) => [p.adm0_l, p.adm0_r].sort().join('-')).sort(), `z${z}`).toEqual(['AUT-LIE', 'CHE-LIE']);
      const at = inTile(VADUZ, z, x, y);
      for (const { p, lines } of lie) expect(side(lines.flat(), at), `z${z} ${JSON.stringify(p)}`).toBe(p.adm0_l === 'LIE' ? 1 : -1);
    }
    for (let z = 0; z < ADM0_SIDES_MINZOOM; z++) {
      const { x, y } = lonLatToTile(VADUZ[0], VADUZ[1], z);
      const ours = countryBorders(await vectorTile(world, z, x, y));
      expect(ours.length, `z${z}`).toBeGreaterThan(0);
      for (const { p } of ours) expect([p.adm0_l, p.adm0_r], `z${z}`).toEqual([undefined, undefined]);
      for (const { p } of countryBorders(mbtilesTile(LIECHTENSTEIN_OMT, z, x, y))) expect([p.adm0_l, p.adm0_r], `official z${z}`).toEqual([undefined, undefined]);
    }
  });

  test('country labels from the zoom OpenMapTiles shows them (rank ≤ z + 1); none for Liechtenstein itself', async () => {
    for (let z = 0; z <= 6; z++) {
      // The tile holding Switzerland's label point (NE's interior point of the country, 8.2° E 46.8° N).
      const { x, y } = lonLatToTile(8.2, 46.8, z);
      const labels = countries(await vectorTile(world, z, x, y));
      for (const p of labels) expect(Number(p.rank), `z${z} ${p.name}`).toBeLessThanOrEqual(z + 1);
      const iso = new Map(labels.map((p) => [p.iso_a2, p]));
      expect(iso.has('LI'), `z${z}`).toBe(false);
      // Switzerland (rank 2) from z1.
      if (z >= 1) expect(iso.get('CH'), `z${z}`).toMatchObject({ name: 'Switzerland', rank: countryRank(NE_LABELRANK.CH) });
      else expect(iso.has('CH')).toBe(false);
    }
  });
});

describe.sequential('Monaco: country labels and borders at z0–6 of a build', () => {
  let out: string;
  let archive: string;
  beforeAll(async () => {
    ({ out, archive } = await buildMonacoVector('osm-lowzoom-labels'));
  }, LONG);

  test("the extract's country label as the official tiles have it, Natural Earth's around it, each once", async () => {
    const box = tileBox(MONACO_HEADER_BBOX);
    for (let z = 0; z <= 6; z++) {
      const { x, y } = lonLatToTile(MONACO[0], MONACO[1], z);
      const pick = (p: Record<string, unknown>) => ({ class: p.class, name: p.name, name_en: p.name_en, name_de: p.name_de, 'name:latin': p['name:latin'], name_int: p.name_int, rank: p.rank, iso_a2: p.iso_a2 });
      const official = countries(mbtilesTile(MONACO_OMT, z, x, y)).map(pick);
      const ours = countries(await vectorTile(archive, z, x, y));
      // Monaco (OSM, rank 3): only from z2 in both.
      expect(ours.filter((p) => p.iso_a2 === 'MC').map(pick), `z${z}`).toEqual(official);
      expect(official.length, `z${z}`).toBe(z >= 2 ? 1 : 0);
      const byIso = new Map(ours.map((p) => [p.iso_a2, p]));
      expect(byIso.size, `z${z}: one label per country`).toBe(ours.length);
      for (const iso of ['FR', 'IT', 'CH', 'AT']) {
        const rank = countryRank(NE_LABELRANK[iso]);
        const label = byIso.get(iso);
        // Present from the zoom its rank allows while its label point lies in the tile around Monaco.
        if (rank > z + 1) expect(label, `z${z} ${iso}`).toBeUndefined();
        else if (z <= 3) expect(label, `z${z} ${iso}`).toMatchObject({ class: 'country', rank, iso_a2: iso, 'name:latin': expect.any(String) });
      }
      for (const p of ours) expect(Number(p.rank), `z${z} ${p.name}`).toBeLessThanOrEqual(z + 1);
    }
    // France's label point (NE's interior point of mainland France, 2.10° E 46.90° N), outside the extract's box.
    const t = await vectorTile(archive, 3, 4, 2);
    const l = t.layers.place;
    const france = [...Array(l.length).keys()].map((i) => l.feature(i)).filter((f) => f.properties.iso_a2 === 'FR');
    expect(france).toHaveLength(1);
    const [q] = france[0].loadGeometry()[0];
    const label = inTile([2.1, 46.9], 3, 4, 2, l.extent);
    expect(Math.hypot(q.x - label[0], -q.y - label[1])).toBeLessThan(2);
    expect(2.1).toBeLessThan(box[0]);
  });

  test('z5–6 borders name the countries on each side (Monaco on the MCO side); z0–4 name none, as the official tiles', async () => {
    for (let z = 0; z <= 6; z++) {
      const { x, y } = lonLatToTile(MONACO[0], MONACO[1], z);
      const borders = countryBorders(await vectorTile(archive, z, x, y));
      expect(borders.length, `z${z}`).toBeGreaterThan(0);
      if (z < ADM0_SIDES_MINZOOM) {
        for (const { p } of borders) expect([p.adm0_l, p.adm0_r], `z${z}`).toEqual([undefined, undefined]);
        continue;
      }
      for (const { p } of borders) expect([p.adm0_l, p.adm0_r].every((c) => typeof c === 'string' && /^[A-Z]{3}$/.test(c)), `z${z} ${JSON.stringify(p)}`).toBe(true);
      const mco = borders.filter(({ p }) => p.adm0_l === 'MCO' || p.adm0_r === 'MCO');
      expect(mco.map(({ p }) => [p.adm0_l, p.adm0_r].sort().join('-')), `z${z}`).toEqual(['FRA-MCO']);
      const at = inTile(MONACO, z, x, y);
      expect(side(mco[0].lines.flat(), at), `z${z}`).toBe(mco[0].p.adm0_l === 'MCO' ? 1 : -1);
    }
    // The TileJSON lists the fields.
    const r = await openArchiveFile(archive);
    const fields = Object.fromEntries(((await r.metadata()).vector_layers as { id: string; fields: Record<string, string> }[]).map((l) => [l.id, l.fields]));
    await r.close();
    expect(fields.boundary).toMatchObject({ adm0_l: 'String', adm0_r: 'String', admin_level: 'Number' });
    expect(fields.place).toMatchObject({ iso_a2: 'String', rank: 'Number' });
  });

  test('osm-bright draws the country labels at z3: its tile differs from one without country label layers where the labels are', async () => {
    // The same style without its place-country layers, beside it (the sprite is found next to the style).
    const dir = await mkdtemp(join(tmpdir(), 'tilebake-no-country-'));
    await cp(dirname(OSM_BRIGHT), dir, { recursive: true });
    const style = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')) as { layers: { id: string }[] };
    style.layers = style.layers.filter((l) => !l.id.startsWith('place-country'));
    await writeFile(join(dir, 'style.json'), JSON.stringify(style));
    const at3 = { tileset: 'openmaptiles', minzoom: 3, maxzoom: 3, scales: [1], formats: ['png'] };
    const styles = { 'osm-bright': { style: OSM_BRIGHT, ...at3 }, 'no-country': { style: join(dir, 'style.json'), ...at3 } };
    const { config } = await writeConfig(out, 'render-labels.json', osmConfig(out, MONACO_PBF, {}, { styles, fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64, timeoutMs: 120_000 } }));
    const v = (await currentVersionDir(out))!.dir;
    await runRenderStage(config, v, { workers: 1 });
    const [x, y] = [4, 2];
    const withLabels = await rgb(await readTile(join(v, 'styles', 'osm-bright', '1x.png.pmtiles'), 3, x, y));
    const without = await rgb(await readTile(join(v, 'styles', 'no-country', '1x.png.pmtiles'), 3, x, y));
    expect(compare(withLabels.data, without.data).bigFraction).toBeGreaterThan(0.002);
    // Pixels that differ lie around the label points of the tile's countries (France's among them).
    const t = await vectorTile(archive, 3, x, y);
    const l = t.layers.place;
    const points: Pt[] = [];
    for (let i = 0; i < l.length; i++) {
      if (l.feature(i).properties.class !== 'country') continue;
      const [q] = l.feature(i).loadGeometry()[0];
      points.push([(q.x / l.extent) * withLabels.width, (q.y / l.extent) * withLabels.height]);
    }
    let differing = 0;
    let nearLabel = 0;
    for (let i = 0, px = 0; i < withLabels.data.length; i += 3, px++) {
      if (Math.max(...[0, 1, 2].map((k) => Math.abs(withLabels.data[i + k] - without.data[i + k]))) <= 40) continue;
      differing++;
      const [cx, cy] = [px % withLabels.width, Math.floor(px / withLabels.width)];
      if (points.some(([lx, ly]) => Math.abs(lx - cx) < 60 && Math.abs(ly - cy) < 20)) nearLabel++;
    }
    expect(differing).toBeGreaterThan(100);
    expect(nearLabel / differing).toBeGreaterThan(0.9);
  }, LONG);
});
