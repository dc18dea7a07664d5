// The fallbacks of a night's patch (pipeline/vector/stage.ts, pipeline/vector/patch.ts): when the previous
// archive cannot be patched exactly, every tile is generated, and the result is still what a fresh
// build of the updated extract gives, tile for tile. A cut of Monaco's extract of 2021-08-01 (600 m by
// 400 m inland, no coastline: cheap to generate; vector tiles only, no styles) and a crafted OsmChange
// file that renames a café in it, applied with osmium. On the same build, a night that renames a street:
// the search index is updated from the changed objects only, and equals an index built from the new extract.
import { spawn } from 'node:child_process';
import { cp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { build } from '../pipeline/build.ts';
import { loadConfig } from '../pipeline/config/index.ts';
import { copyWithHeaderBBox } from '../pipeline/osm/pbf-bounds.ts';
import { readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { update } from '../pipeline/update/index.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { DEFAULT_LANGUAGES } from '../lib/languages.ts';
import { buildSearchIndex } from '../pipeline/search/build.ts';
import { indexContent } from './fixtures/search.ts';
import { archiveTiles, tempDir } from './render-helpers.ts';
import { captureStderr, fileUrl, MONACO, referenceExtract, replicationFolder, writeUpdateConfig } from './update-helpers.ts';

const LONG = 300_000;
/** The cut: Moneghetti and Boulevard de Belgique. */
const CUT = [7.418, 43.738, 7.424, 43.742];
const GRID = { minzoom: 14, maxzoom: 14, metatile: 4, margin: 64 };
/** Richmond Bar (a café shown in the poi layer at z14) renamed. */
const RENAME = `<?xml version="1.0" encoding="UTF-8"?>
<osmChange version="0.6" generator="tilebake test">
  <modify>
    <node id="3087468610" version="4" timestamp="2021-08-01T21:00:00Z" lat="43.7396022" lon="7.423202">
      <tag k="name" v="Tilebake Test Café"/>
      <tag k="amenity" v="cafe"/>
      <tag k="addr:country" v="MC"/>
    </node>
  </modify>
</osmChange>
`;

/** Avenue du Berceau (a residential street of the cut, one way) renamed. */
const STREET_RENAME = `<?xml version="1.0" encoding="UTF-8"?>
<osmChange version="0.6" generator="tilebake test">
  <modify>
    <way id="157719649" version="6" timestamp="2021-08-01T21:00:00Z">
${[252458631, 8258594212, 252479740, 3414792354, 3414792355, 252458679, 252458680, 1204288348, 252458682].map((n) => `      <nd ref="${n}"/>`).join('\n')}
      <tag k="highway" v="residential"/>
      <tag k="name" v="Avenue Tilebake"/>
      <tag k="oneway" v="yes"/>
    </way>
  </modify>
</osmChange>
`;

/** Run `osmium ARGS`. */
function osmium(args: string[]): Promise<void> {
  return new Promise((res, rej) => {
    const p = spawn('osmium', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => (code === 0 ? res() : rej(new Error(`osmium ${args[0]}: ${err}`))));
  });
}

/** `osmium apply-changes` of `changes` on `from` into `to`, with the given header options. */
const applyChanges = (from: string, changes: string[], to: string, header: string[] = []) =>
  osmium(['apply-changes', '--no-progress', '-O', '-f', 'pbf', '-o', to, ...header.map((h) => `--output-header=${h}`), from, ...changes]);

describe.sequential('a night that cannot patch the previous archive generates every tile (Monaco)', () => {
  let dir: string;
  let osc: string;
  /** The cut at sequence 3047 (its header says so, as Geofabrik's do), its replication folder at 3048, and its build. */
  let base: string;
  let served: string;
  let v1Out: string;
  const log = captureStderr();
  const text = log.text;
  /** A config with the one OSM tileset `omt` over `source`, no styles. */
  const config = async (name: string, out: string, source: string, replication?: string) => loadConfig(await writeUpdateConfig(dir, name, { out, source, replication, render: GRID }));
  /** The tiles of the current version of `out`. */
  const tilesOf = async (out: string) => archiveTiles(join((await currentVersionDir(out))!.dir, 'data/omt.pmtiles'));

  beforeAll(async () => {
    log.start();
    dir = await tempDir('update-fallbacks');
    osc = join(dir, 'rename.osc');
    await writeFile(osc, RENAME);
    const h = (await readOsmHeader(MONACO.extract)).replication!;
    base = join(dir, 'base.osm.pbf');
    await osmium(['extract', '--no-progress', '-s', 'smart', '--set-bounds', '-b', CUT.join(','), '-o', base, MONACO.extract,
      `--output-header=osmosis_replication_sequence_number=${h.sequence}`, `--output-header=osmosis_replication_timestamp=${h.timestamp}`, `--output-header=osmosis_replication_base_url=${h.baseUrl}`]);
    served = await replicationFolder(MONACO, join(dir, 'monaco-updates'), 3048);
    v1Out = join(dir, 'v1');
    await build(await config('v1.json', v1Out, base, fileUrl(served)));
  }, LONG);
  afterAll(async () => {
    log.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the updated extract\'s bounds differ from the previous one\'s: every tile generated (logged), equal to a fresh build', async () => {
    const out = join(dir, 'bounds');
    await cp(v1Out, out, { recursive: true });
    const v1 = await tilesOf(out);
    // The change applied, and the header's bbox cut to its northern half (the cut spans the z14 rows
    // 5973 and 5974, split at 43.7394°; now only row 5973), as a re-cut extract's would be.
    const [w, , e, n] = (await readOsmHeader(base)).bbox!;
    const applied = join(dir, 'bounds-applied.osm.pbf');
    const after = join(dir, 'bounds-after.osm.pbf');
    await applyChanges(base, [osc], applied);
    await copyWithHeaderBBox(applied, after, [w, 43.7400, e, n]);
    // What `tilebake update` hands the build: the new extract and how it came about.
    log.clear();
    await build(await config('bounds-v2.json', out, after), { vectorPatches: { omt: { previous: base, changes: [osc] } } });
    expect(text()).toContain('vector omt: the extract\'s bounds changed: generating every tile');
    expect(text()).not.toMatch(/the change can change|copied the others from the previous archive/);
    const patched = await tilesOf(out);

    const refOut = join(dir, 'bounds-reference');
    await build(await config('bounds-reference.json', refOut, after));
    const reference = await tilesOf(refOut);
    expect(reference).not.toEqual(v1); // the previous archive alone would be wrong
    expect(reference.size).toBeLessThan(v1.size); // row 5974 is no longer in the box: a patch of the previous archive would keep it
    expect(patched).toEqual(reference);
  }, LONG);

  it('the previous archive was not generated from the copy the change applies to (a foreign extract at the same sequence): every tile generated, equal to a fresh build', async () => {
    const out = join(dir, 'foreign');
    await cp(v1Out, out, { recursive: true });
    const v1 = await tilesOf(out);
    // The config now names another extract that says it is at the same sequence (3047) with the same bounds: the café renamed.
    const h = await readOsmHeader(base);
    const renamed = join(dir, 'foreign-renamed.osm.pbf');
    const applied = `${renamed}.applied`;
    await applyChanges(base, [osc], applied, [`osmosis_replication_sequence_number=${h.replication!.sequence}`, `osmosis_replication_timestamp=${h.replication!.timestamp}`, `osmosis_replication_base_url=${h.replication!.baseUrl}`]);
    await copyWithHeaderBBox(applied, renamed, h.bbox!);
    log.clear();
    const r = await update(await config('foreign-v2.json', out, renamed, fileUrl(served)));
    // 3048 changes one relation whose tiles stay as they were: patching would reuse the previous archive, without the rename.
    expect(r.tilesets[0]).toMatchObject({ from: { sequence: 3047 }, to: { sequence: 3048 }, changes: 1 });
    expect(text()).toMatch(/vector omt: the current archive was not generated from \S+3047\.osm\.pbf with these settings: generating every tile/);
    expect(text()).not.toMatch(/the change can change|archive reused from the previous build/);
    const updated = await tilesOf(out);
    const m = await readManifestOrEmpty((await currentVersionDir(out))!.dir);
    expect(m.osm?.omt).toMatchObject({ sequence: 3048 });

    const ref = await referenceExtract({ extract: renamed, replication: MONACO.replication }, 3047, 3048, join(dir, 'foreign-reference.osm.pbf'));
    const refOut = join(dir, 'foreign-reference');
    await build(await config('foreign-reference.json', refOut, ref));
    const reference = await tilesOf(refOut);
    expect(reference).not.toEqual(v1); // the previous archive alone would be wrong
    expect(updated).toEqual(reference);
  }, LONG);

  it('a night that renames a street: the index updated from the changed objects only, the new name found and the old one not, equal to an index built from the new extract', async () => {
    const out = join(dir, 'street');
    await cp(v1Out, out, { recursive: true });
    const osc2 = join(dir, 'street.osc');
    await writeFile(osc2, STREET_RENAME);
    const applied = join(dir, 'street-applied.osm.pbf');
    const after = join(dir, 'street-after.osm.pbf');
    await applyChanges(base, [osc2], applied);
    await copyWithHeaderBBox(applied, after, (await readOsmHeader(base)).bbox!);
    const before = SearchIndex.open(join((await currentVersionDir(out))!.dir, 'data/omt.search.sqlite'));
    expect(before.search({ q: 'Avenue du Berceau', limit: 1, kinds: ['street'] })[0]?.entry.name).toBe('Avenue du Berceau');
    before.close();
    log.clear();
    await build(await config('street-v2.json', out, after), { vectorPatches: { omt: { previous: base, changes: [osc2] } } });
    expect(text()).toMatch(/search omt: search index updated: \d+ objects touched/);
    expect(text()).not.toContain('search omt: search index of');
    const path = join((await currentVersionDir(out))!.dir, 'data/omt.search.sqlite');
    const index = SearchIndex.open(path);
    try {
      const found = index.search({ q: 'Avenue Tilebake', limit: 3, kinds: ['street'] });
      expect(found[0]?.entry).toMatchObject({ name: 'Avenue Tilebake', osmType: 'W', osmId: 157719649 });
      expect(index.search({ q: 'Avenue du Berceau', limit: 10, kinds: ['street'] }).map((h) => h.entry.name)).not.toContain('Avenue du Berceau');
      // As you type, and the reverse geocoding of a point on it.
      expect(index.search({ q: 'Avenue Tileb', limit: 3 }).some((h) => h.entry.name === 'Avenue Tilebake')).toBe(true);
      // (Its point is a node of the way: a junction, maybe, with other streets there too.)
      const there = index.reverse({ lon: found[0].entry.lon, lat: found[0].entry.lat, radiusM: 20, limit: 5, kinds: ['street'] });
      expect(there.find((h) => h.entry.name === 'Avenue Tilebake')?.distance).toBeLessThan(0.5);
    } finally {
      index.close();
    }
    const fresh = join(dir, 'street-fresh.search.sqlite');
    await buildSearchIndex(after, fresh, { languages: DEFAULT_LANGUAGES, workDir: join(dir, 'street-fresh-work'), label: 'fresh' });
    const [updated, reference] = [indexContent(path), indexContent(fresh)];
    expect(updated.entries.size).toBeGreaterThan(50);
    expect(updated).toEqual(reference);
  }, LONG);
});
