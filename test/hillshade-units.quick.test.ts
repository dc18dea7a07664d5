// Hillshade and colour relief without a build: GDAL's DEM processing on synthetic tile grids, the
// ramp checks, the gdaldem arguments, the Web Mercator geotransform and scale, and the config.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { colorReliefTile, flatShade, hillshadeArgs, hillshadeGreyAlpha, hillshadeOverlay, hillshadeTile, overlayRamp, type HillshadeOptions, type TileGrid } from '../lib/elevation/dem-processing.ts';
import { isUserError } from '../lib/errors.ts';
import { mercatorGroundScale, pixelCentreAxes, tileBounds, tileMercatorGeoTransform } from '../lib/tile-math.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { checkRamp, DEFAULT_RELIEF_RAMP, readRamp } from '../pipeline/elevation/relief-ramp.ts';
import { hillshadeOptions } from '../pipeline/elevation/shaded.ts';

const DEFAULTS: HillshadeOptions = { azimuth: 315, altitude: 45, zfactor: 1, method: 'standard', algorithm: 'Horn' };
const SIZE = 16;

/** A tile grid (z12 over Monaco) of heights `f(column, row)` over the buffered grid. */
function grid(f: (c: number, r: number) => number, buffer = 1): TileGrid {
  const n = SIZE + 2 * buffer;
  const heights = new Float32Array(n * n);
  for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) heights[r * n + c] = f(c, r);
  return { z: 12, x: 2132, y: 1493, size: SIZE, buffer, heights };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-hillshade-units-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Web Mercator grid of a tile', () => {
  it('has the pixel centres pixelCentreAxes samples, and cos(latitude) ground metres per metre', () => {
    const [z, x, y] = [12, 2132, 1493];
    const gt = tileMercatorGeoTransform(z, x, y, 256, 1);
    const { lats, lons } = pixelCentreAxes(z, x, y, 256, 1);
    const R = 6378137;
    // Pixel (i, j)'s centre in metres, back to degrees.
    for (const i of [0, 1, 128, 257]) {
      const mx = gt[0] + (i + 0.5) * gt[1], my = gt[3] + (i + 0.5) * gt[5];
      expect((mx / R) * (180 / Math.PI)).toBeCloseTo(lons[i], 9);
      expect((Math.atan(Math.sinh(my / R)) * 180) / Math.PI).toBeCloseTo(lats[i], 9);
    }
    const [, s, , n] = tileBounds(z, x, y);
    const scale = mercatorGroundScale(z, y);
    expect(scale).toBeLessThan(Math.cos((s * Math.PI) / 180));
    expect(scale).toBeGreaterThan(Math.cos((n * Math.PI) / 180));
  });
});

describe('gdaldem arguments', () => {
  it('pass the light, the scale and one variant flag', () => {
    expect(hillshadeArgs(DEFAULTS, 0.72)).toEqual(['-of', 'MEM', '-z', '1', '-s', '0.72', '-alt', '45', '-alg', 'Horn', '-az', '315']);
    expect(hillshadeArgs({ ...DEFAULTS, method: 'multidirectional' }, 1)).not.toContain('-az');
    expect(hillshadeArgs({ ...DEFAULTS, method: 'multidirectional' }, 1)).toContain('-multidirectional');
    expect(hillshadeArgs({ ...DEFAULTS, method: 'igor', algorithm: 'ZevenbergenThorne' }, 1)).toEqual(expect.arrayContaining(['-igor', 'ZevenbergenThorne', '-az']));
  });
});

describe("GDAL's hillshade of a tile grid", () => {
  it('is flat grey on flat ground, and transparent there as an overlay', async () => {
    const flat = await flatShade(DEFAULTS);
    // gdaldem: 1 + 254 · sin(altitude) for a flat cell.
    expect(flat).toBe(Math.round(1 + 254 * Math.sin(Math.PI / 4)));
    const la = await hillshadeGreyAlpha(grid(() => 0), DEFAULTS);
    for (let i = 0; i < la.length; i += 2) expect([la[i], la[i + 1]]).toEqual([flat, 255]);
    const rgba = await hillshadeOverlay(grid(() => 0), DEFAULTS);
    expect(rgba.every((v, i) => i % 4 !== 3 || v === 0)).toBe(true);
  });

  it('lights slopes facing the north-west and shadows the others; the overlay darkens and lightens them', async () => {
    const flat = await flatShade(DEFAULTS);
    // Heights rising to the east (columns), 40 m a pixel: a slope facing west.
    const west = await hillshadeTile(grid((c) => c * 40), DEFAULTS);
    const east = await hillshadeTile(grid((c) => -c * 40), DEFAULTS);
    expect(west[5 * SIZE + 5]).toBeGreaterThan(flat);
    expect(east[5 * SIZE + 5]).toBeLessThan(flat);
    const dark = await hillshadeOverlay(grid((c) => -c * 40), DEFAULTS);
    const px = (5 * SIZE + 5) * 4;
    expect([dark[px], dark[px + 1], dark[px + 2]]).toEqual([0, 0, 0]);
    expect(dark[px + 3]).toBeGreaterThan(0);
    const light = await hillshadeOverlay(grid((c) => c * 40), DEFAULTS);
    expect([light[px], light[px + 1], light[px + 2]]).toEqual([255, 255, 255]);
    expect(light[px + 3]).toBeGreaterThan(0);
  });

  it("shades a slope by its ground steepness: the tile's latitude scale, not projected metres", async () => {
    // The same height steps are steeper on the ground than in Mercator metres (× 1/cos lat).
    const slope = grid((c) => -c * 10);
    const ours = await hillshadeTile({ ...slope, heights: slope.heights.slice() }, DEFAULTS);
    const unscaled = await hillshadeTile({ ...slope, z: 12, y: 2048 }, DEFAULTS); // a row at the equator: scale ≈ 1
    expect(ours[5 * SIZE + 5]).toBeLessThan(unscaled[5 * SIZE + 5]);
  });

  it('leaves pixels without a height (or a neighbour without one) transparent', async () => {
    const la = await hillshadeGreyAlpha(grid((c) => (c < 8 ? NaN : 100)), DEFAULTS);
    expect(la[(3 * SIZE + 2) * 2 + 1]).toBe(0);
    expect(la[(3 * SIZE + 12) * 2 + 1]).toBe(255);
  });

  it('overlay ramp: flat transparent, black to the darkest, white to the brightest', () => {
    expect(overlayRamp(181).split('\n')).toEqual(['nv 0 0 0 0', '1 0 0 0 255', '181 0 0 0 0', '182 255 255 255 0', '255 255 255 255 255', '']);
  });
});

describe('colour relief', () => {
  it("follows the ramp: GDAL's colours at known heights, transparent without data", async () => {
    const ramp = 'nv 0 0 0 0\n0 0 0 255\n1000 255 0 0\n2000 0 255 0 128\n';
    const heights = [0, 500, 1000, 1500, 2000, 2500, NaN];
    const g = grid((c) => heights[c % heights.length], 0);
    const rgba = await colorReliefTile(g, ramp, 'interpolate');
    const at = (c: number) => [...rgba.subarray(c * 4, c * 4 + 4)];
    // Between entries: linear, within GDAL's rounding (3.6 rounds x.5 down).
    const near = (got: number[], want: number[]) => got.forEach((v, i) => expect(Math.abs(v - want[i]), `${got} vs ${want}`).toBeLessThanOrEqual(1));
    expect(at(0)).toEqual([0, 0, 255, 255]);
    near(at(1), [127.5, 0, 127.5, 255]);
    expect(at(2)).toEqual([255, 0, 0, 255]);
    near(at(3), [127.5, 127.5, 0, 191.5]);
    expect(at(4)).toEqual([0, 255, 0, 128]);
    expect(at(5)).toEqual([0, 255, 0, 128]); // above the last entry: its colour
    expect(at(6)[3]).toBe(0);
    const nearest = await colorReliefTile(grid((c) => (c % 2 ? 600 : 400), 0), ramp, 'nearest');
    expect([...nearest.subarray(0, 8)]).toEqual([0, 0, 255, 255, 255, 0, 0, 255]); // the nearest entry's colour, no blend
  });

  it('the default ramp is a valid gdaldem ramp, blue below the sea, green low, light high', async () => {
    const entries = checkRamp(DEFAULT_RELIEF_RAMP, 'default');
    expect(entries.length).toBeGreaterThan(10);
    const rgba = await colorReliefTile(grid((c) => [-1000, 100, 7000][c % 3], 0), DEFAULT_RELIEF_RAMP, 'interpolate');
    const [sea, low, high] = [0, 1, 2].map((c) => [...rgba.subarray(c * 4, c * 4 + 4)]);
    expect(sea[2]).toBeGreaterThan(sea[0]);
    expect(low[1]).toBeGreaterThan(low[0]);
    expect(high[0] + high[1] + high[2]).toBeGreaterThan(low[0] + low[1] + low[2]);
  });
});

describe('ramp files', () => {
  const message = (text: string) => {
    try {
      checkRamp(text, 'relief.txt');
    } catch (e) {
      expect(isUserError(e)).toBe(true);
      return (e as Error).message;
    }
    throw new Error('expected a UserError');
  };

  it("accept gdaldem's forms: RGB, RGBA, colour names, nv, commas, tabs and colons, comments", () => {
    const entries = checkRamp('# a comment\n\nnv 0 0 0 0\n0,10,20,30\n100\t white\n200:1:2:3:4\n300 brown 128\n', 'relief.txt');
    expect(entries).toEqual([
      { elevation: null, rgba: [0, 0, 0, 0] },
      { elevation: 0, rgba: [10, 20, 30, 255] },
      { elevation: 100, rgba: 'white' },
      { elevation: 200, rgba: [1, 2, 3, 4] },
      { elevation: 300, rgba: 'brown' },
    ]);
  });

  it('name the file and line of a bad entry, on one line', () => {
    for (const [text, want] of [
      ['0 0 0 0\n100 0 0\n', /^relief\.txt:2: .*"100 0 0"/],
      ['0 0 0 0\nhigh 1 2 3\n', /^relief\.txt:2: "high" is not an elevation/],
      ['0 0 0 300\n', /^relief\.txt:1: "300" is not a colour value 0-255/],
      ['50% 0 0 0\n', /^relief\.txt:1: percentages .* metres/],
      ['0 pink\n', /^relief\.txt:1: "pink" is not a colour GDAL knows/],
      ['nv 0 0 0 0\n', /^relief\.txt: no colour entries/],
    ] as const) {
      const msg = message(text);
      expect(msg).toMatch(want);
      expect(msg).not.toContain('\n');
    }
  });

  it('a missing file is one line naming it', async () => {
    const file = join(dir, 'missing.txt');
    await expect(readRamp(file)).rejects.toThrow(`${file}: cannot read the colour ramp (ENOENT)`);
    await writeFile(join(dir, 'ok.txt'), '0 0 0 0\n');
    expect(await readRamp(join(dir, 'ok.txt'))).toBe('0 0 0 0\n');
  });
});

describe('config', () => {
  const base = { tilesets: { omt: 'tiles/monaco.mbtiles' } };
  const sources = ['dem/a.hgt'];

  it("gives GDAL's defaults, and the ramp relative to the config", () => {
    const c = parseConfig({ ...base, elevation: { sources, hillshade: {}, relief: { ramp: 'ramps/relief.txt' } } }, '/cfg/build.json');
    const h = c.elevation?.hillshade;
    expect(h).toEqual({ id: 'hillshade', format: 'png', azimuth: 315, altitude: 45, zfactor: 1, method: 'standard', algorithm: 'Horn', flat: 'grey' });
    expect(h && hillshadeOptions(h)).toEqual(DEFAULTS);
    expect(c.elevation?.relief).toEqual({ id: 'relief', format: 'png', match: 'interpolate', ramp: '/cfg/ramps/relief.txt' });
    expect(parseConfig({ ...base, elevation: { sources, hillshade: false } }, '/cfg/build.json').elevation?.hillshade).toBe(false);
  });

  it('names bad fields and clashing ids', () => {
    const bad = (elevation: unknown) => {
      try {
        parseConfig({ ...base, elevation }, '/cfg/build.json');
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('expected an error');
    };
    expect(bad({ sources, hillshade: { altitude: 95 } })).toContain('$.elevation.hillshade.altitude');
    expect(bad({ sources, hillshade: { method: 'sunny' } })).toContain('$.elevation.hillshade.method');
    expect(bad({ sources, hillshade: { format: 'jpg' } })).toContain('$.elevation.hillshade.format');
    expect(bad({ sources, relief: { minzoom: 12, maxzoom: 10 } })).toContain('$.elevation.relief.minzoom: expected minzoom <= maxzoom');
    expect(bad({ sources, hillshade: { id: 'terrain' } })).toContain('$.elevation.hillshade.id: "terrain" is already the id of $.elevation.terrain');
    expect(bad({ sources, relief: { id: 'omt' } })).toContain('$.elevation.relief.id: "omt" is already the id of $.tilesets.omt');
  });
});
