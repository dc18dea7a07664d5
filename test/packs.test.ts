// Packs (issue 41) over the shared Liechtenstein build (fixtures/packs.ts: v1 at sequence 2434, v2 after
// the real dailies 2435–2436), made by the CLI: `tilebake pack` of a box against the served tiles, read back
// with the `pmtiles` npm reader and GDAL's MBTiles driver; deltas across the nightly update and pack-apply;
// the search index cut to the box and its delta (--search); the CLI's bad input. GET /packs/… is in packs-http.test.ts. One build, one server, no browser.
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import gdal from 'gdal-async';
import { PMTiles } from 'pmtiles';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBuildId, publishVersion, pruneVersions, versionPath } from '../lib/build-version.ts';
import { aggTilesHashOfDb } from '../lib/packs/mbtiles.ts';
import { openArchiveFile, PMTilesWriter, tileIdToZxy, writerOptionsOf } from '../lib/pmtiles/index.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { tileRangeForBBox, type BBox } from '../lib/tile-math.ts';
import { ADMIN, packCli as cli, packOk as ok, packsBuild, pmtilesTiles, servePacksCopy, VADUZ_BOX, type PacksBuild, type PacksServer } from './fixtures/packs.ts';
import { NodeFileSource } from './fixtures/pmtiles-file-source.ts';
import { request, type ServeProcess } from './fixtures/server/helpers.ts';
import { tempDir } from './render-helpers.ts';

const BOX = VADUZ_BOX.join(',');

/** True when tile z/x/y is among tile-math's tiles of `box`. */
function inBox(key: string, box: BBox): boolean {
  const [z, x, y] = key.split('/').map(Number);
  const r = tileRangeForBBox(box, z);
  return x >= r.minX && x <= r.maxX && y >= r.minY && y <= r.maxY;
}

/** The tiles of a build archive (the build's own file) within `box`. */
async function buildTilesIn(path: string, box: BBox): Promise<Map<string, Buffer>> {
  const all = await pmtilesTiles(path);
  return new Map([...all].filter(([k]) => inBox(k, box)));
}

describe.sequential('packs made by the CLI from the Liechtenstein build (2434, then the dailies 2435–2436)', () => {
  let b: PacksBuild;
  let dir: string;
  let s: PacksServer;
  /** A copy for CLI runs (versions are added and pruned here). */
  let cliOut: string;
  /** A copy the server serves (v1). */
  let srvOut: string;
  let server: ServeProcess;
  const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });
  const get = (path: string, secret = ADMIN) => s.get(path, secret);

  beforeAll(async () => {
    b = await packsBuild();
    dir = await tempDir('packs');
    s = await servePacksCopy(b, dir);
    ({ cliOut, srvOut, server } = s);
  });
  afterAll(async () => {
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a box: exactly the build\'s tiles in it, each byte for byte the served tile, metadata right (pmtiles npm reader)', async () => {
    const to = join(dir, 'v1-pmtiles');
    await ok(['pack', '--out', srvOut, '--to', to, '--bbox', BOX]);
    const json = JSON.parse(await readFile(join(to, 'pack.json'), 'utf8'));
    expect(json).toMatchObject({ format: 'tilebake-pack/1', build: b.v1, container: 'pmtiles', area: { bbox: VADUZ_BOX } });
    expect(json.archives.map((a: { file: string }) => a.file)).toEqual(['omt.pmtiles', 'styles-osm-bright.jpg.pmtiles', 'styles-osm-bright.png.pmtiles']);
    const served: Record<string, (k: string) => string> = {
      'omt.pmtiles': (k) => `/data/omt/${k}.pbf`,
      'styles-osm-bright.jpg.pmtiles': (k) => `/styles/osm-bright/${k}.jpg`,
      'styles-osm-bright.png.pmtiles': (k) => `/styles/osm-bright/${k}.png`,
    };
    const manifest = JSON.parse(await readFile(join(srvOut, versionPath(b.v1), 'manifest.json'), 'utf8'));
    for (const a of json.archives) {
      const path = join(to, a.file);
      const tiles = await pmtilesTiles(path);
      // The build's tiles in the box, no others.
      const source = a.file === 'omt.pmtiles' ? manifest.tilesets.omt.archive : Object.values(manifest.styles['osm-bright'].archives as Record<string, { archive: string; format: string }>).find((x) => a.file.includes(`.${x.format}.`))!.archive;
      const want = await buildTilesIn(join(srvOut, versionPath(b.v1), source), VADUZ_BOX);
      expect([...tiles.keys()].sort()).toEqual([...want.keys()].sort());
      expect(tiles.size).toBe(a.tiles);
      expect([...tiles.keys()].every((k) => inBox(k, VADUZ_BOX))).toBe(true);
      // Stored bytes equal what is served gzip-encoded as stored; the npm reader's (decoded) tiles equal what is served decoded.
      const npm = new PMTiles(new NodeFileSource(path));
      for (const [k, bytes] of tiles) {
        const r = await get(served[a.file](k));
        expect(r.status, `${a.file} ${k}`).toBe(200);
        expect(r.body.equals(bytes), `${a.file} ${k} equals the served tile`).toBe(true);
        const plain = await request(`${server.url}${served[a.file](k)}`, { headers: auth(ADMIN) });
        const [z, x, y] = k.split('/').map(Number);
        expect(Buffer.from((await npm.getZxy(z, x, y))!.data).equals(plain.body), `${a.file} ${k} as the pmtiles reader reads it`).toBe(true);
      }
      // Metadata: the pack's box and zooms, the build, TileJSON fields of what is served.
      const h = await npm.getHeader();
      const m = (await npm.getMetadata()) as Record<string, any>;
      expect([h.minLon, h.minLat, h.maxLon, h.maxLat].map((v) => Number(v.toFixed(6)))).toEqual(VADUZ_BOX);
      expect([h.minZoom, h.maxZoom]).toEqual([a.minzoom, a.maxzoom]);
      expect(m.tilebake).toMatchObject({ build: b.v1, source: a.source });
      expect(m.bounds).toEqual(VADUZ_BOX);
      const tj = (await get(a.file === 'omt.pmtiles' ? '/data/omt.json' : '/styles/osm-bright/rendered.json')).json();
      expect(m.attribution).toBe(tj.attribution);
      if (a.file === 'omt.pmtiles') expect(m.vector_layers).toEqual(tj.vector_layers);
    }
  });

  it('MBTiles: the same tiles (TMS rows), Martin\'s agg_tiles_hash; GDAL\'s MBTiles driver reads the raster pack', async () => {
    const to = join(dir, 'v1-mbtiles');
    await ok(['pack', '--out', srvOut, '--to', to, '--bbox', BOX, '--format', 'mbtiles', '--build', b.v1]);
    const pm = await pmtilesTiles(join(dir, 'v1-pmtiles', 'styles-osm-bright.png.pmtiles'));
    const path = join(to, 'styles-osm-bright.png.mbtiles');
    const db = new Database(path, { readonly: true });
    const meta = Object.fromEntries((db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[]).map((r) => [r.name, r.value]));
    expect(meta).toMatchObject({ format: 'png', bounds: BOX, minzoom: '0', maxzoom: '12', tilebake_build: b.v1, tilebake_source: 'styles/osm-bright.png' });
    expect(meta.agg_tiles_hash).toBe(aggTilesHashOfDb(db));
    const rows = db.prepare('SELECT zoom_level z, tile_column x, tile_row r, tile_data d FROM tiles').all() as { z: number; x: number; r: number; d: Buffer }[];
    db.close();
    expect(rows.length).toBe(pm.size);
    for (const t of rows) expect(t.d.equals(pm.get(`${t.z}/${t.x}/${2 ** t.z - 1 - t.r}`)!)).toBe(true);
    // GDAL: the driver, the zooms as overviews, and a z12 tile's pixels as sharp decodes the served PNG.
    const ds = gdal.open(path);
    try {
      expect(ds.driver.description).toBe('MBTiles');
      const band = ds.bands.get(1);
      expect(band.overviews.count()).toBeGreaterThan(0);
      const gt = ds.geoTransform!;
      const span = 40075016.68557849 / 2 ** 12;
      expect(gt[1]).toBeCloseTo(span / 256, 6);
      // A z12 tile wholly inside the raster GDAL makes of the pack (its extent is the bounds').
      const at = (k: string) => {
        const [, x, y] = k.split('/').map(Number);
        return { col: Math.round((x * span - 20037508.342789244 - gt[0]) / gt[1]), row: Math.round((gt[3] - (20037508.342789244 - y * span)) / -gt[5]) };
      };
      // Each z12 tile's part inside the raster GDAL makes of the pack (its extent is the bounds').
      let compared = 0;
      for (const key of [...pm.keys()].filter((k) => k.startsWith('12/'))) {
        const { col, row } = at(key);
        const [c0, r0, c1, r1] = [Math.max(col, 0), Math.max(row, 0), Math.min(col + 256, ds.rasterSize.x), Math.min(row + 256, ds.rasterSize.y)];
        if (c1 <= c0 || r1 <= r0) continue;
        const served = await sharp(pm.get(key)!).removeAlpha().raw().toBuffer();
        for (let c = 1; c <= 3; c++) {
          const px = ds.bands.get(c).pixels.read(c0, r0, c1 - c0, r1 - r0) as Uint8Array;
          let differ = 0;
          for (let j = 0; j < r1 - r0; j++) for (let i = 0; i < c1 - c0; i++) if (px[j * (c1 - c0) + i] !== served[((r0 - row + j) * 256 + (c0 - col + i)) * 3 + c - 1]) differ++;
          expect(differ, `band ${c} of ${key}`).toBe(0);
          compared += px.length;
        }
      }
      expect(compared).toBeGreaterThan(3 * 100 * 100);
    } finally {
      ds.close();
    }
  });

  it('a delta across the nightly update: old pack + delta = new pack (PMTiles byte for byte, MBTiles by agg_tiles_hash)', async () => {
    for (const format of ['pmtiles', 'mbtiles']) {
      const [v2, delta, applied] = ['full2', 'delta', 'applied'].map((n) => join(dir, `${format}-${n}`));
      // The full pack of v1 is the first two tests' (the same box, every archive, of v1's files).
      const v1 = join(dir, `v1-${format}`);
      expect(JSON.parse(await readFile(join(v1, 'pack.json'), 'utf8'))).toMatchObject({ build: b.v1, container: format, area: { bbox: VADUZ_BOX } });
      await ok(['pack', '--out', cliOut, '--to', v2, '--bbox', BOX, '--format', format]);
      await ok(['pack', '--out', cliOut, '--to', delta, '--bbox', BOX, '--format', format, '--since', b.v1]);
      await ok(['pack-apply', v1, delta, '--to', applied]);
      const dj = JSON.parse(await readFile(join(delta, 'pack.json'), 'utf8'));
      expect(dj).toMatchObject({ build: b.v2, since: b.v1 });
      const omt = dj.archives.find((a: { file: string }) => a.file === `omt.${format}`);
      // What 2436 changed in the box: the tiles whose bytes differ between the two builds' archives.
      const old = await buildTilesIn(join(cliOut, versionPath(b.v1), 'data/omt.pmtiles'), VADUZ_BOX);
      const neu = await buildTilesIn(join(cliOut, versionPath(b.v2), 'data/omt.pmtiles'), VADUZ_BOX);
      const changed = [...neu].filter(([k, v]) => !old.get(k)?.equals(v)).map(([k]) => k);
      expect(changed.length).toBeGreaterThan(0);
      expect(omt.changed).toBe(changed.length);
      expect(omt.removed).toEqual([]);
      const j2 = JSON.parse(await readFile(join(v2, 'pack.json'), 'utf8'));
      const ja = JSON.parse(await readFile(join(applied, 'pack.json'), 'utf8'));
      expect(ja.build).toBe(b.v2);
      for (const a of j2.archives) {
        const d = dj.archives.find((x: { file: string }) => x.file === a.file);
        expect(d.bytes).toBeLessThan(a.bytes);
        if (format === 'pmtiles') {
          expect((await readFile(join(applied, a.file))).equals(await readFile(join(v2, a.file))), a.file).toBe(true);
          expect(ja.archives.find((x: { file: string }) => x.file === a.file).sha256).toBe(a.sha256);
        } else {
          const hash = (p: string) => {
            const db = new Database(p, { readonly: true });
            try {
              return [(db.prepare("SELECT value FROM metadata WHERE name = 'agg_tiles_hash'").get() as { value: string }).value, aggTilesHashOfDb(db)];
            } finally {
              db.close();
            }
          };
          const [want, wantTiles] = hash(join(v2, a.file));
          expect(hash(join(applied, a.file))).toEqual([want, wantTiles]);
          if (a.file.startsWith('omt')) expect(hash(join(v1, a.file))[0]).not.toBe(want);
        }
      }
    }
  });

  it('--search: the index cut to the box answers as the build\'s index does there; old cut + delta = new cut byte for byte', async () => {
    const [v1, v2, delta, applied] = ['full1', 'full2', 'delta', 'applied'].map((n) => join(dir, `search-${n}`));
    const pack = (to: string, ...more: string[]) => ok(['pack', '--out', cliOut, '--to', to, '--bbox', BOX, '--tilesets', 'omt', '--search', ...more]);
    await pack(v1, '--build', b.v1);
    await pack(v2, '--build', b.v2);
    await pack(delta, '--build', b.v2, '--since', b.v1);
    await ok(['pack-apply', v1, delta, '--to', applied]);
    const [j2, dj, ja] = await Promise.all([v2, delta, applied].map(async (d) => JSON.parse(await readFile(join(d, 'pack.json'), 'utf8'))));
    expect(j2.search).toEqual([{ file: 'omt.search.sqlite', tileset: 'omt', entries: expect.any(Number), bytes: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(dj.search[0]).toMatchObject({ file: 'omt.search.sqlite', tileset: 'omt', changed: expect.any(Number), removed: expect.any(Number) });
    expect(dj.search[0].bytes).toBeLessThan(j2.search[0].bytes);
    expect(ja.search[0].sha256).toBe(j2.search[0].sha256);
    expect((await readFile(join(applied, 'omt.search.sqlite'))).equals(await readFile(join(v2, 'omt.search.sqlite')))).toBe(true);

    // The same answers: every place, and streets, of the box, from the pack and from the build's index with the box as filter.
    const packed = SearchIndex.open(join(v2, 'omt.search.sqlite'));
    const built = SearchIndex.open(join(cliOut, versionPath(b.v2), 'data/omt.search.sqlite'));
    try {
      expect(packed.entries).toBe(j2.search[0].entries);
      expect(packed.entries).toBeLessThan(built.entries);
      const db = new Database(join(v2, 'omt.search.sqlite'), { readonly: true });
      const names = db.prepare("SELECT name FROM entry WHERE kind IN ('place', 'street') AND name IS NOT NULL ORDER BY id LIMIT 150").pluck().all() as string[];
      db.close();
      expect(names.length).toBeGreaterThan(100);
      const keys = (i: SearchIndex, q: string, bbox?: BBox) => i.search({ q, limit: 5, bbox }).map((h) => h.entry.key);
      for (const q of [...names, ...names.slice(0, 30).map((n) => n.slice(0, 5)), 'Vadus', 'Landstr']) expect(keys(packed, q), q).toEqual(keys(built, q, VADUZ_BOX));
      const at = { lon: 9.5215, lat: 47.1395, radiusM: 300, limit: 3, kinds: ['address', 'street'] as const };
      expect(packed.reverse(at).map((h) => h.entry.key)).toEqual(built.reverse(at).map((h) => h.entry.key));
    } finally {
      packed.close();
      built.close();
    }
    const r = await cli(['pack', '--out', cliOut, '--to', join(dir, 'search-bad'), '--bbox', BOX, '--styles', 'osm-bright', '--search']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--search: no tileset is packed/);
  });

  it('a tile the newer version lacks is removed; a delta since a version no longer kept names the kept ones', async () => {
    // v3: v2 with one tile of the box left out of its vector archive (written by the project's writer).
    const v3 = newBuildId(new Date(Date.now() + 1000), b.v2);
    await cp(join(cliOut, versionPath(b.v2)), join(cliOut, versionPath(v3)), { recursive: true });
    const src = await openArchiveFile(join(cliOut, versionPath(b.v2), 'data/omt.pmtiles'));
    const gone = '14/8626/5753';
    try {
      const w = await PMTilesWriter.create(join(cliOut, versionPath(v3), 'data/omt.pmtiles'), writerOptionsOf(src.header, await src.metadata()));
      for await (const e of src.entries()) {
        const bytes = await src.readRange(e.offset, e.length);
        for (let t = 0; t < e.runLength; t++) if (tileIdToZxy(e.tileId + t).join('/') !== gone) await w.addTileId(e.tileId + t, bytes);
      }
      await w.finish();
    } finally {
      await src.close();
    }
    await publishVersion(cliOut, v3);
    const [full2, full3, delta, applied] = ['r-full2', 'r-full3', 'r-delta', 'r-applied'].map((n) => join(dir, n));
    await ok(['pack', '--out', cliOut, '--to', full2, '--bbox', BOX, '--tilesets', 'omt', '--build', b.v2]);
    await ok(['pack', '--out', cliOut, '--to', full3, '--bbox', BOX, '--tilesets', 'omt']);
    await ok(['pack', '--out', cliOut, '--to', delta, '--bbox', BOX, '--tilesets', 'omt', '--since', b.v2]);
    expect(JSON.parse(await readFile(join(delta, 'pack.json'), 'utf8')).archives[0]).toMatchObject({ changed: 0, removed: [gone] });
    await ok(['pack-apply', full2, delta, '--to', applied]);
    expect((await readFile(join(applied, 'omt.pmtiles'))).equals(await readFile(join(full3, 'omt.pmtiles')))).toBe(true);
    expect((await pmtilesTiles(join(full2, 'omt.pmtiles'))).has(gone)).toBe(true);
    expect((await pmtilesTiles(join(applied, 'omt.pmtiles'))).has(gone)).toBe(false);
    // Keep 2: v1 goes; a delta since it is refused, naming what is kept.
    expect(await pruneVersions(cliOut, 2)).toEqual([b.v1]);
    const r = await cli(['pack', '--out', cliOut, '--to', join(dir, 'gone'), '--bbox', BOX, '--since', b.v1]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`--since ${b.v1}: build ${b.v1} is not kept in ${cliOut} (kept: ${b.v2}, ${v3}; current: ${v3})`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('bad input: the flag, file and field named, a non-zero exit, nothing written', async () => {
    const to = join(dir, 'bad');
    const cases: [string[], string][] = [
      [['--bbox', '9.6,47.1,9.5,47.2'], '--bbox: expected west,south,east,north in degrees with west < east and south < north (got "9.6,47.1,9.5,47.2")'],
      [['--bbox', BOX, '--minzoom', '15'], '--minzoom/--maxzoom: omt has zooms 0–14, none of them asked for'],
      [['--bbox', BOX, '--styles', 'nope'], 'pack: unknown style "nope" (the build has osm-bright)'],
      // The world is in omt up to z6 (world_maxzoom): a box far away meets only those zooms.
      [['--bbox', '100,10,101,11', '--minzoom', '7'], '--bbox: the area [100, 10, 101, 11] does not meet omt\'s bounds'],
    ];
    const geo = join(dir, 'area.geojson');
    await writeFile(geo, JSON.stringify({ type: 'Feature', geometry: { type: 'Polygon', coordinates: [[[9.5, 47.1], [9.6, 47.1], [9.5, 47.1]]] } }));
    cases.push([['--geojson', geo], `--geojson ${geo}: $.geometry.coordinates[0]: expected a linear ring of at least 4 [lon, lat] positions`]);
    for (const [args, message] of cases) {
      const r = await cli(['pack', '--out', srvOut, '--to', to, ...args]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const notDelta = await cli(['pack-apply', join(dir, 'v1-pmtiles'), join(dir, 'v1-pmtiles'), '--to', to]);
    expect(notDelta.code).not.toBe(0);
    expect(notDelta.stderr).toContain(`${join(dir, 'v1-pmtiles', 'pack.json')}: not a delta (no "since")`);
    await mkdir(join(dir, 'broken'), { recursive: true });
    await writeFile(join(dir, 'broken', 'pack.json'), '{"format": "other", "archives": []}');
    const broken = await cli(['pack-apply', join(dir, 'broken'), join(dir, 'pmtiles-delta'), '--to', to]);
    expect(broken.stderr).toContain(`${join(dir, 'broken', 'pack.json')}: not a tilebake pack list (field "format" must be "tilebake-pack/1")`);
    expect(broken.code).not.toBe(0);
    await expect(readFile(join(to, 'pack.json'))).rejects.toThrow();
  });
});
