// Imagery tilesets end to end (one shared build, fixtures/imagery.ts): the tiles equal GDAL's own gdalwarp
// of the same tile box where both have pixels and are transparent where the image has none; the server
// answers 204 outside the images, @2x only where baked, TileJSON and WMTS; packs and the export carry the
// @2x tiles; the hybrid style draws the imagery under the roads and is served with its raster source.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty, type Manifest } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { copyOfFixture } from './fixtures/cache.ts';
import { HRO, HYBRID_TILE, imageryBuild, imageryConfig, LANDSAT, mosaicFiles } from './fixtures/imagery.ts';
import { CLI, ROOT, request, serveOptions } from './fixtures/server/helpers.ts';

const run = promisify(execFile);
const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Half the Web Mercator world's width in metres. */
const R = 20037508.342789244;

let out: string;
let version: string;
let images: string;
let manifest: Manifest;
let server: RunningServer;
let work: string;

beforeAll(async () => {
  ({ out, version, images } = await imageryBuild());
  manifest = await readManifestOrEmpty(version);
  server = await startServer(serveOptions(out, { logLevel: 'silent' }), { tokenHashes: [hashToken(TOKEN)] });
  work = await mkdtemp(join(tmpdir(), 'tilebake-imagery-'));
}, 300_000);

afterAll(async () => {
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** RGBA pixels of an encoded tile. */
async function rgba(bytes: Uint8Array): Promise<{ data: Buffer; width: number }> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width };
}

/** A stored tile of the build (undefined: not stored). */
async function stored(archive: string, z: number, x: number, y: number): Promise<Uint8Array | undefined> {
  const r = await openArchiveFile(join(version, archive));
  try {
    return await r.getTile(z, x, y);
  } finally {
    await r.close();
  }
}

/** GDAL's gdalwarp of tile z/x/y's box (bilinear, Web Mercator, alpha) from `src` (later files on top), `size` px, as RGBA. */
async function gdalwarp(src: string | string[], z: number, x: number, y: number, size: number): Promise<Buffer> {
  const t = (2 * R) / 2 ** z;
  const te = [-R + x * t, R - (y + 1) * t, -R + (x + 1) * t, R - y * t].map(String);
  const file = join(work, `${z}-${x}-${y}-${size}-${[src].flat().length}.tif`);
  await run('gdalwarp', ['-q', '-overwrite', '-t_srs', 'EPSG:3857', '-te', ...te, '-ts', String(size), String(size), '-r', 'bilinear', '-dstalpha', ...[src].flat(), file]);
  // Grey and alpha (a grey image) as RGBA.
  return (await sharp(file).toColourspace('srgb').ensureAlpha().raw().toBuffer({ resolveWithObject: true })).data;
}

/** Where both have pixels: the mean colour difference; and the pixels one has and the other not. */
function compare(ours: Buffer, theirs: Buffer): { mean: number; both: number; oursOnly: number; theirsOnly: number; theirsEmpty: number } {
  let both = 0, sum = 0, oursOnly = 0, theirsOnly = 0, theirsEmpty = 0;
  for (let i = 0; i < ours.length; i += 4) {
    const a = ours[i + 3], b = theirs[i + 3];
    if (b === 0) theirsEmpty++;
    if (a > 0 && b > 0) {
      both++;
      sum += (Math.abs(ours[i] - theirs[i]) + Math.abs(ours[i + 1] - theirs[i + 1]) + Math.abs(ours[i + 2] - theirs[i + 2])) / 3;
    } else if (a > 0) oursOnly++;
    else if (b > 0) theirsOnly++;
  }
  return { mean: both ? sum / both : 0, both, oursOnly, theirsOnly, theirsEmpty };
}

describe('imagery tiles equal gdalwarp of the same tile box', () => {
  // Landsat: z7 (downsampled), z9 (its own zoom), @2x z8 (512 px); the scene's northern edge crosses z9/145/218.
  // HRO: z17 (from its external overviews), z20 (its own zoom), @2x z19.
  // A glob of two overlapping pieces in two coordinate systems: gdalwarp of both, the later on top; one grey band.
  const cases: { what: string; src: () => string | string[]; archive: string; z: number; x: number; y: number; size: number }[] = [
    { what: 'Landsat z7', src: () => LANDSAT, archive: 'data/landsat.pmtiles', z: 7, x: 36, y: 54, size: 256 },
    { what: 'Landsat z9 at the scene edge', src: () => LANDSAT, archive: 'data/landsat.pmtiles', z: 9, x: 145, y: 218, size: 256 },
    { what: 'Landsat @2x z8', src: () => LANDSAT, archive: 'data/landsat@2x.pmtiles', z: 8, x: 72, y: 109, size: 512 },
    { what: 'HRO z17 (overviews)', src: () => HRO, archive: 'data/hro.pmtiles', z: 17, x: 27388, y: 50114, size: 256 },
    { what: 'HRO z20', src: () => HRO, archive: 'data/hro.pmtiles', z: 20, x: 219108, y: 400917, size: 256 },
    { what: 'HRO @2x z19', src: () => HRO, archive: 'data/hro@2x.pmtiles', z: 19, x: 109554, y: 200458, size: 512 },
    { what: 'a glob mosaic z9', src: () => [mosaicFiles(images).west, mosaicFiles(images).east], archive: 'data/mosaic.pmtiles', z: 9, x: 145, y: 219, size: 256 },
    { what: 'a grey image z20', src: () => mosaicFiles(images).grey, archive: 'data/grey.pmtiles', z: 20, x: 219108, y: 400917, size: 256 },
  ];
  it.each(cases)('$what', async (c) => {
    const tile = await stored(c.archive, c.z, c.x, c.y);
    expect(tile, `${c.archive} ${c.z}/${c.x}/${c.y}`).toBeDefined();
    const ours = await rgba(tile!);
    expect(ours.width).toBe(c.size);
    const d = compare(ours.data, await gdalwarp(c.src(), c.z, c.x, c.y, c.size));
    expect(d.both, 'pixels both have').toBeGreaterThan(1000);
    // 0.00 at the images' own zooms; 1.7 and 2.4 levels downsampled (the warper's kernel scale is set per chunk: a tile there, a block here).
    expect(d.mean, 'mean difference where both have pixels (levels)').toBeLessThan(3);
    // Transparent exactly where gdalwarp finds no image (nodata, outside the scene), and nowhere else.
    expect(d.theirsEmpty, 'pixels gdalwarp finds no image for').toBeGreaterThan(0);
    expect(d.oursOnly, 'pixels only ours has').toBe(0);
    expect(d.theirsOnly, 'pixels only gdalwarp has').toBe(0);
  });

  it('leaves pixels outside the Landsat scene transparent (nodata 0 around it)', async () => {
    const ours = await rgba((await stored('data/landsat.pmtiles', 9, 145, 218))!);
    const transparent = ours.data.filter((_, i) => i % 4 === 3 && ours.data[i] === 0).length;
    // The scene's northern edge crosses the tile: a good part of it is outside.
    expect(transparent).toBeGreaterThan(256 * 256 * 0.1);
    expect(transparent).toBeLessThan(256 * 256 * 0.9);
  });
});

describe('the build', () => {
  it('records raster tilesets with zooms from the pixel size and @2x where the images are fine enough', () => {
    expect(manifest.tilesets.landsat).toMatchObject({ kind: 'raster', format: 'webp', tileSize: 256, minzoom: 7, maxzoom: 9, hidpi: { archive: 'data/landsat@2x.pmtiles', maxzoom: 8 } });
    // 15 cm at 39° N: z20's pixels (0.149 m × cos 39°) are the first finer than the image's.
    expect(manifest.tilesets.hro).toMatchObject({ kind: 'raster', minzoom: 17, maxzoom: 20, hidpi: { maxzoom: 19 } });
    const [w, s, e, n] = manifest.tilesets.hro.bounds;
    expect(w).toBeCloseTo(-104.7753, 3);
    expect(n).toBeCloseTo(38.9538, 3);
    expect(e - w).toBeLessThan(0.001);
    expect(s).toBeLessThan(n);
  });
});

describe('serving raster tilesets', () => {
  const get = (path: string) => request(`${server.url}${path}`, { headers: AUTH });

  it('serves stored tiles and @2x tiles as they are, 204 inside the zooms but outside the images', async () => {
    const one = await get('/data/landsat/9/145/219.webp');
    expect(one.status).toBe(200);
    expect(one.headers['content-type']).toBe('image/webp');
    expect(Buffer.compare(one.body, Buffer.from((await stored('data/landsat.pmtiles', 9, 145, 219))!))).toBe(0);
    const two = await get('/data/landsat/8/72/109@2x.webp');
    expect(two.status).toBe(200);
    expect((await sharp(two.body).metadata()).width).toBe(512);
    // Zoom 9 over the open Atlantic, far from the scene.
    const outside = await get('/data/landsat/9/200/200.webp');
    expect(outside.status).toBe(204);
    expect(outside.body.length).toBe(0);
  });

  it('answers 404 naming what it serves for another format, @2x above its zooms and zooms out of range', async () => {
    const png = await get('/data/landsat/9/145/219.png');
    expect(png.status).toBe(404);
    expect(png.json().error).toContain('serves {z}/{x}/{y}.webp (z7-9) and {z}/{x}/{y}@2x.webp (z7-8)');
    const deep = await get('/data/landsat/9/145/219@2x.webp');
    expect(deep.status).toBe(404);
    expect(deep.json()).toMatchObject({ status: 404, minzoom: 7, maxzoom: 8 });
    expect((await get('/data/landsat/6/36/54.webp')).status).toBe(404);
  });

  it('gives TileJSON with tileSize, format, bounds, zooms and the @2x tiles', async () => {
    const tj = (await get('/data/landsat.json')).json();
    expect(tj).toMatchObject({ tilejson: '3.0.0', scheme: 'xyz', format: 'webp', tileSize: 256, minzoom: 7, maxzoom: 9, maxzoom_2x: 8, attribution: 'Landsat 7 (USGS)' });
    expect(tj.tiles).toEqual([`${server.url}/data/landsat/{z}/{x}/{y}.webp`]);
    expect(tj.tiles_2x).toEqual([`${server.url}/data/landsat/{z}/{x}/{y}@2x.webp`]);
    expect(tj.bounds).toEqual(manifest.tilesets.landsat.bounds);
    expect(tj.vector_layers).toBeUndefined();
  });

  it('lists raster tilesets as WMTS layers whose tile URLs answer', async () => {
    const one = (await get('/data/landsat/wmts.xml')).body.toString('utf8');
    expect(one).toContain('<ows:Identifier>landsat</ows:Identifier>');
    expect(one).toContain('<ows:Identifier>landsat@2x</ows:Identifier>');
    const template = /template="([^"]+\/data\/landsat\/\{TileMatrix\}[^"]+@2x\.webp)"/.exec(one)?.[1];
    expect(template).toBeDefined();
    const url = template!.replace('{TileMatrix}', '8').replace('{TileCol}', '72').replace('{TileRow}', '109');
    expect((await request(url, { headers: AUTH })).status).toBe(200);
    // The whole service lists styles and raster tilesets alike.
    const all = (await get('/styles/wmts.xml')).body.toString('utf8');
    for (const id of ['hybrid', 'landsat', 'landsat@2x', 'hro', 'hro@2x']) expect(all).toContain(`<ows:Identifier>${id}</ows:Identifier>`);
    expect((await get('/data/nassau/wmts.xml')).status).toBe(404);
  });

  it('lists raster tilesets in the preview catalog with their tile size and @2x zooms', async () => {
    const catalog = (await get('/catalog.json')).json() as { tilesets: { id: string; kind: string; tileSize?: number; maxzoom_2x?: number }[] };
    expect(catalog.tilesets.find((t) => t.id === 'landsat')).toMatchObject({ kind: 'raster', tileSize: 256, maxzoom_2x: 8 });
  });
});

describe('the hybrid style', () => {
  it('draws the imagery under the roads and labels', async () => {
    const { z, x, y } = HYBRID_TILE;
    const tile = (await stored('styles/hybrid/1x.jpg.pmtiles', z, x, y))!;
    const hybrid = await rgba(tile);
    // The imagery's z9 parent, its quarter under this tile upscaled: what the style draws under the roads.
    const parent = await stored('data/landsat.pmtiles', z - 1, x >> 1, y >> 1);
    const quarter = await sharp(parent!).extract({ left: (x & 1) * 128, top: (y & 1) * 128, width: 128, height: 128 }).resize(256, 256, { kernel: 'linear' }).ensureAlpha().raw().toBuffer();
    const diffs: number[] = [];
    for (let i = 0; i < quarter.length; i += 4) diffs.push((Math.abs(hybrid.data[i] - quarter[i]) + Math.abs(hybrid.data[i + 1] - quarter[i + 1]) + Math.abs(hybrid.data[i + 2] - quarter[i + 2])) / 3);
    diffs.sort((a, b) => a - b);
    // Most pixels are the imagery (the median within a few levels); roads and labels change the rest.
    expect(diffs[diffs.length >> 1]).toBeLessThan(8);
    expect(diffs[Math.floor(diffs.length * 0.98)]).toBeGreaterThan(40);
  });

  it('is served with its raster source at this server', async () => {
    const style = (await request(`${server.url}/styles/hybrid/style.json`, { headers: AUTH })).json();
    expect(style.sources.landsat).toEqual({ type: 'raster', url: `${server.url}/data/landsat.json`, tileSize: 256 });
    expect(style.sources.openmaptiles).toMatchObject({ type: 'vector', url: `${server.url}/data/nassau.json` });
    const { z, x, y } = HYBRID_TILE;
    const r = await request(`${server.url}/styles/hybrid/${z}/${x}/${y}.jpg`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(Buffer.compare(r.body, Buffer.from((await stored('styles/hybrid/1x.jpg.pmtiles', z, x, y))!))).toBe(0);
  });
});

describe('a rebuild', () => {
  it('links the archives of unchanged images and warps a mosaic again when one of its files changed', async () => {
    const copy = await copyOfFixture(out, 'tilebake-imagery-rebuild-');
    try {
      // The fixture's config on the copy: its images and fonts are the copy's.
      const config = join(copy, '.config.json');
      await writeFile(config, JSON.stringify({ ...imageryConfig(join(copy, '.fonts', 'fonts-latin'), join(copy, '.images')), out: copy }));
      await run('gdal_edit.py', ['-mo', 'NOTE=changed', mosaicFiles(join(copy, '.images')).east]);
      const before = (await currentVersionDir(copy))!.dir;
      const r = await run(process.execPath, [CLI, 'build', '--config', config], { cwd: ROOT, env: { ...process.env, TILEBAKE_QUIET: '' } });
      const log = r.stdout + r.stderr;
      const after = (await currentVersionDir(copy))!.dir;
      expect(after).not.toBe(before);
      for (const id of ['landsat', 'hro', 'grey']) expect(log).toContain(`imagery ${id}: source and settings unchanged, archives reused from the previous build`);
      expect(log).not.toContain('imagery mosaic: source and settings unchanged');
      // Linked, not written again.
      expect((await stat(join(after, 'data/landsat@2x.pmtiles'))).ino).toBe((await stat(join(before, 'data/landsat@2x.pmtiles'))).ino);
      expect((await stat(join(after, 'data/mosaic.pmtiles'))).ino).not.toBe((await stat(join(before, 'data/mosaic.pmtiles'))).ino);
      // Its pixels did not change (only the file's metadata): the same tiles, under the new fingerprint.
      const tile = async (v: string) => {
        const a = await openArchiveFile(join(v, 'data/mosaic.pmtiles'));
        try {
          return [a.header.numAddressedTiles, Buffer.from((await a.getTile(9, 145, 219))!).toString('base64')];
        } finally {
          await a.close();
        }
      };
      expect(await tile(after)).toEqual(await tile(before));
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});

describe('packs and the export carry raster tilesets', () => {
  it('tilebake pack cuts the 1x and @2x archives', async () => {
    const to = join(work, 'pack');
    await run(process.execPath, [CLI, 'pack', '--out', out, '--to', to, '--tilesets', 'landsat', '--bbox=-78,24.5,-77.5,25'], { cwd: ROOT, env: { ...process.env, TILEBAKE_QUIET: '1' } });
    expect((await readdir(to)).sort()).toEqual(['landsat.pmtiles', 'landsat@2x.pmtiles', 'pack.json']);
    const two = await openArchiveFile(join(to, 'landsat@2x.pmtiles'));
    try {
      expect(two.header.maxZoom).toBe(8);
      expect(await two.metadata()).toMatchObject({ tileSize: 512, format: 'webp' });
    } finally {
      await two.close();
    }
  });

  it('tilebake export writes the @2x tiles beside the 1x ones', async () => {
    const to = join(work, 'export');
    await run(process.execPath, [CLI, 'export', '--out', out, '--to', to, '--public-url', 'https://tiles.example.com'], { cwd: ROOT, env: { ...process.env, TILEBAKE_QUIET: '1' } });
    expect((await stat(join(to, 'data/landsat/8/72/109@2x.webp'))).size).toBeGreaterThan(0);
    expect(Buffer.compare(await readFile(join(to, 'data/landsat/9/145/219.webp')), Buffer.from((await stored('data/landsat.pmtiles', 9, 145, 219))!))).toBe(0);
    expect(JSON.parse(await readFile(join(to, 'data/landsat.json'), 'utf8')).tiles_2x).toEqual([expect.stringMatching(/^https:\/\/tiles\.example\.com\/.*data\/landsat\/\{z\}\/\{x\}\/\{y\}@2x\.webp$/)]);
  });
});
