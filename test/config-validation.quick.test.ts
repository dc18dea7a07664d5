import { currentVersionDir } from '../lib/build-version.ts';
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUserError } from '../lib/errors.ts';
import { loadConfig, parseConfig } from '../pipeline/config/index.ts';
import { runCli } from './fixtures/cli.ts';

const MONACO = resolve('data/sample/monaco_omt.mbtiles');

/** The message of the UserError `f` throws (fails the test when it does not throw one). */
function userErrorOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(isUserError(e), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a UserError');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseConfig', () => {
  const file = '/cfg/build.json';
  const base = { tilesets: { omt: 'tiles/monaco.mbtiles' } };

  it('names the file, the JSON path and what was expected', () => {
    const msg = userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', scales: [3] } } }, file));
    expect(msg).toContain(file);
    expect(msg).toContain('$.styles.x.scales[0]: expected 1 or 2');
  });

  it('reports every problem, one line each', () => {
    const msg = userErrorOf(() =>
      parseConfig({ ...base, styles: { x: { style: 's.json', formats: ['gif'], minzoom: 'a' } }, render: { metatile: 0 }, extra: true }, file),
    );
    expect(msg).toMatch(/\$\.styles\.x\.formats\[0\]: expected "png", "jpg" or "webp"/);
    expect(msg).toMatch(/\$\.styles\.x\.minzoom: .*expected number/);
    expect(msg).toMatch(/\$\.render\.metatile: .*>=1/);
    expect(msg).toMatch(/\$\.extra: unknown field \(expected one of: .*tilesets.*\)/);
  });

  it('names unknown nested fields with the allowed ones, and bad ids', () => {
    const msg = userErrorOf(() => parseConfig({ tilesets: { omt: { source: 'a', sorce: 'b' }, 'bad id': 'c' } }, file));
    expect(msg).toContain('$.tilesets.omt.sorce: unknown field (expected one of: source, name, attribution, description, bbox, world_maxzoom, replication, languages, encodings, format, minzoom, maxzoom, scales, resampling, nodata, search, layers)');
    expect(msg).toMatch(/\$\.tilesets\["bad id"\]: invalid key: expected an id/);
  });

  it('takes a replication folder URL on a tileset (https:// or file://) and names a bad one', () => {
    const ok = parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', replication: 'https://download.geofabrik.de/europe/liechtenstein-updates/' } } }, file);
    expect(ok.tilesets.omt.replication).toBe('https://download.geofabrik.de/europe/liechtenstein-updates/');
    expect(parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', replication: 'file:///srv/updates' } } }, file).tilesets.omt.replication).toBe('file:///srv/updates');
    expect(userErrorOf(() => parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', replication: 'ftp://x/' } } }, file))).toMatch(/\$\.tilesets\.omt\.replication: expected an https:\/\/, http:\/\/ or file:\/\/ URL/);
  });

  it('takes WebP tiles with their encoder settings, and names bad ones', () => {
    const c = parseConfig({ ...base, styles: { x: { style: 's.json', formats: ['webp', 'png'] } } }, file);
    expect(c.styles.x.formats).toEqual(['webp', 'png']);
    expect(c.render.webp).toEqual({ quality: 90, lossless: false });
    expect(parseConfig({ ...base, render: { webp: { lossless: true, quality: 40 } } }, file).render.webp).toEqual({ quality: 40, lossless: true });
    const msg = userErrorOf(() => parseConfig({ ...base, render: { webp: { quality: 0, lossless: 'yes', effort: 6 } } }, file));
    expect(msg).toMatch(/\$\.render\.webp\.quality: .*>=1/);
    expect(msg).toMatch(/\$\.render\.webp\.lossless: .*expected boolean/);
    expect(msg).toContain('$.render.webp.effort: unknown field (expected one of: quality, lossless)');
    expect(userErrorOf(() => parseConfig({ ...base, render: { webp: { quality: 100.5 } } }, file))).toMatch(/\$\.render\.webp\.quality: .*(integer|int)/);
    expect(userErrorOf(() => parseConfig({ ...base, render: { webp: { quality: 101 } } }, file))).toMatch(/\$\.render\.webp\.quality: .*<=100/);
  });

  it("takes a tileset's languages and a style's language; a malformed, repeated or script code names its JSON path", () => {
    const ok = parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', languages: ['de', 'zh-Hant', 'ja_kana'] } }, styles: { de: { style: 's.json', language: 'de' } } }, file);
    expect(ok.tilesets.omt.languages).toEqual(['de', 'zh-Hant', 'ja_kana']);
    expect(ok.styles.de.language).toBe('de');
    // Absent: the OSM source writes OpenMapTiles' list (lib/languages.ts); not filled in here.
    expect(parseConfig({ tilesets: { omt: { source: 'a.osm.pbf' } } }, file).tilesets.omt.languages).toBeUndefined();
    const msg = userErrorOf(() => parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', languages: ['de', 'EN', 'latin', 7] } }, styles: { x: { style: 's.json', language: 'german' } } }, file));
    expect(msg).toContain(file);
    expect(msg).toContain('$.tilesets.omt.languages[1]: "EN" is not a language code as in name:xx');
    expect(msg).toContain('$.tilesets.omt.languages[2]: "latin" is not a language: name:latin is always written');
    expect(msg).toContain('$.tilesets.omt.languages[3]: expected a language code');
    expect(msg).toContain('$.styles.x.language: "german" is not a language code');
    expect(userErrorOf(() => parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', languages: ['de', 'fr', 'de'] } } }, file))).toContain('$.tilesets.omt.languages[2]: "de" is listed twice');
    expect(userErrorOf(() => parseConfig({ tilesets: { omt: { source: 'a.osm.pbf', languages: 'de' } } }, file))).toContain('$.tilesets.omt.languages: expected a list of language codes');
  });

  it('checks zoom order, bbox and the style → tileset reference', () => {
    expect(userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', minzoom: 9, maxzoom: 3 } } }, file))).toContain('$.styles.x.minzoom: expected minzoom <= maxzoom');
    expect(userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', maxzoom: 14, maxzoom_served: 12 } } }, file))).toContain('$.styles.x.maxzoom_served: expected maxzoom_served >= maxzoom (12 < 14)');
    expect(parseConfig({ ...base, styles: { x: { style: 's.json', maxzoom: 14, maxzoom_served: 18 } } }, file).styles.x.maxzoom_served).toBe(18);
    expect(parseConfig({ ...base, styles: { x: { style: 's.json' } } }, file).styles.x.overzoom).toBe('upscale');
    expect(parseConfig({ ...base, styles: { x: { style: 's.json', overzoom: 'render' } } }, file).styles.x.overzoom).toBe('render');
    expect(userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', overzoom: 'magnify' } } }, file))).toContain('$.styles.x.overzoom: expected "upscale" or "render"');
    expect(userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', bbox: [8, 43, 7, 44] } } }, file))).toMatch(/\$\.styles\.x\.bbox: expected \[west, south, east, north\]/);
    expect(userErrorOf(() => parseConfig({ ...base, styles: { x: { style: 's.json', tileset: 'nope' } } }, file))).toContain('$.styles.x.tileset: expected one of the configured tileset ids (omt)');
  });

  it('takes a tileset\'s encodings (MVT always, MLT beside it) and names a bad list', () => {
    const at = (encodings: unknown) => parseConfig({ tilesets: { omt: { source: 'a', encodings } } }, file);
    expect(at(['mvt', 'mlt']).tilesets.omt.encodings).toEqual(['mvt', 'mlt']);
    expect(userErrorOf(() => at(['mlt']))).toContain('$.tilesets.omt.encodings: expected "mvt" among the encodings (MLT tiles are encoded from the MVT archive, which every tileset has)');
    expect(userErrorOf(() => at(['mvt', 'webp']))).toContain('$.tilesets.omt.encodings[1]:');
    expect(userErrorOf(() => at(['mvt', 'mvt']))).toContain('$.tilesets.omt.encodings: expected each encoding once');
  });

  it('fills defaults and resolves paths against the config file', () => {
    const c = parseConfig({ ...base, styles: { x: { style: 'styles/x.json' } }, elevation: { sources: ['dem/a.hgt'] }, fonts: 'fonts' }, file);
    expect(c.out).toBe('/cfg/build');
    expect(c.tilesets.omt).toEqual({ id: 'omt', source: '/cfg/tiles/monaco.mbtiles', encodings: ['mvt'] });
    expect(c.styles.x).toMatchObject({ style: '/cfg/styles/x.json', tileset: 'omt', scales: [1, 2], formats: ['png', 'jpg'], minzoom: 0, maxzoom: 14 });
    expect(c.elevation?.sources).toEqual([{ path: '/cfg/dem/a.hgt' }]);
    expect(c.fonts).toBe('/cfg/fonts');
  });

  it('accepts the sample config', async () => {
    const c = await loadConfig('data/sample/config.json');
    expect(Object.keys(c.tilesets)).toEqual(['openmaptiles', 'nassau', 'landsat']);
    expect(c.tilesets.openmaptiles.source).toBe(MONACO);
    // The imagery tileset takes its zooms from the image's pixels; the hybrid style draws it.
    expect(c.tilesets.landsat).toMatchObject({ format: 'webp', source: resolve('data/sample/imagery/landsat-andros-RGB.byte.tif') });
    expect(c.tilesets.landsat.maxzoom).toBeUndefined();
    expect(Object.keys(c.styles).sort()).toEqual(['dark-matter', 'hybrid', 'osm-bright', 'positron', 'topo']);
    expect(c.styles.hybrid).toMatchObject({ tileset: 'nassau', scales: [1], formats: ['jpg'] });
    // Terrain's maxzoom comes from the DEM; contours take the default intervals.
    expect(c.elevation?.terrain).toMatchObject({ id: 'terrain', minzoom: 0 });
    expect(c.elevation?.terrain && c.elevation.terrain.maxzoom).toBeUndefined();
    expect(c.elevation?.contours).toEqual({ id: 'contours', minzoom: 11, maxzoom: 14, intervals: { 11: [100, 500], 12: [50, 250], 13: [20, 100], 14: [10, 50] } });
  });

  it('checks the contour section: intervals, zooms, and ids that clash with other tilesets', () => {
    const bad = (elevation: unknown) => {
      try {
        parseConfig({ ...base, elevation }, file);
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('expected an error');
    };
    const sources = ['dem/a.hgt'];
    expect(bad({ sources, contours: { intervals: { 12: [20, 50] } } })).toContain('$.elevation.contours.intervals.12: expected the index interval to be a multiple of the minor one');
    expect(bad({ sources, contours: { intervals: { 12: [0, 50] } } })).toContain('$.elevation.contours.intervals.12[0]');
    expect(bad({ sources, contours: { intervals: { x: [10, 50] } } })).toMatch(/\$\.elevation\.contours\.intervals.*zoom/);
    expect(bad({ sources, contours: { minzoom: 14, maxzoom: 12 } })).toContain('$.elevation.contours.minzoom: expected minzoom <= maxzoom');
    expect(bad({ sources, contours: { id: 'omt' } })).toContain('$.elevation.contours.id: "omt" is already the id of $.tilesets.omt');
    expect(bad({ sources, terrain: { id: 'x' }, contours: { id: 'x' } })).toContain('$.elevation.contours.id: "x" is already the id of $.elevation.terrain');
    expect(bad({ sources, terrain: { minzoom: 9, maxzoom: 8 } })).toContain('$.elevation.terrain.minzoom: expected minzoom <= maxzoom');
  });
});

describe('tilebake build --config (CLI)', () => {
  it('exits non-zero on an invalid config, naming the file and the JSON path', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ tilesets: { t: 'x.mbtiles' }, styles: { x: { style: 's.json', scales: [1, 3] } } }));
    const r = await runCli(['build', '--config', bad], { cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(bad);
    expect(r.stderr).toContain('$.styles.x.scales[1]: expected 1 or 2');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(dir)).toEqual(['bad.json']);
  });

  it('exits non-zero on a config that is not JSON or does not exist', async () => {
    const broken = join(dir, 'broken.json');
    await writeFile(broken, '{\n  "tilesets": {\n    "t": "a.mbtiles",\n  }\n}\n');
    const r = await runCli(['build', '--config', broken], { cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/broken\.json: not valid JSON at line 4/);

    const missing = await runCli(['build', '--config', join(dir, 'missing.json')], { cwd: dir });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/missing\.json: cannot read config/);
  });

  it('resolves tileset and out paths relative to the config file, not the working directory', async () => {
    const cfgDir = join(dir, 'project');
    await mkdir(join(cfgDir, 'tiles'), { recursive: true });
    await copyFile(MONACO, join(cfgDir, 'tiles', 'm.mbtiles'));
    await writeFile(join(cfgDir, 'tilebake.json'), JSON.stringify({ out: 'public', tilesets: { m: 'tiles/m.mbtiles' } }));
    const elsewhere = join(dir, 'elsewhere');
    await mkdir(elsewhere);
    const r = await runCli(['build', '--config', join(cfgDir, 'tilebake.json')], { cwd: elsewhere });
    expect(r.code, r.stderr).toBe(0);
    expect(await readdir(join((await currentVersionDir(join(cfgDir, 'public')))!.dir, 'data'))).toEqual(['m.pmtiles']);
    expect((await readdir(join(cfgDir, 'public'))).sort()).toEqual(['builds', 'current.json']);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('a config naming a missing tileset source fails naming that file', async () => {
    const cfg = join(dir, 'missing-source.json');
    await writeFile(cfg, JSON.stringify({ out: 'out-missing', tilesets: { m: 'nowhere.mbtiles' } }));
    const r = await runCli(['build', '--config', cfg], { cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(join(dir, 'nowhere.mbtiles'));
    expect(await readdir(join(dir, 'out-missing')).catch(() => [])).not.toContain('data');
  });
});
