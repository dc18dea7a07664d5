// `tilebake update` over file://, night by night through Monaco's August 2021 (Geofabrik extract of
// 2021-08-01 at sequence 3047, real dailies 3048–3076, 16 of them empty): an empty night re-packs and
// re-renders nothing, an up-to-date server publishes nothing, and the month's result (MVT and MLT) equals a fresh
// build of the extract with the same diffs applied by osmium.
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { build } from '../pipeline/build.ts';
import { loadConfig } from '../pipeline/config/index.ts';
import { update } from '../pipeline/update/index.ts';
import { indexContent } from './fixtures/search.ts';
import { archiveTiles, tempDir } from './render-helpers.ts';
import { captureStderr, changedTiles, expectedRerenders, fileUrl, MONACO, referenceExtract, replicationFolder, writeUpdateConfig } from './update-helpers.ts';

const LONG = 900_000;
const STYLE = { minzoom: 13, maxzoom: 14, metatile: 4, margin: 64 };

describe.sequential('tilebake update over file:// (Monaco, August 2021, night by night)', () => {
  let dir: string;
  let served: string;
  let configFile: string;
  const log = captureStderr();
  const text = log.text;

  /** Config over `source`; `replication` set only for the updated build. */
  const writeCfg = (name: string, out: string, source: string, replication?: string, styles = true) =>
    writeUpdateConfig(dir, name, { out, source, replication, encodings: ['mvt', 'mlt'], style: styles ? STYLE : undefined, render: STYLE });
  /** The server publishes sequences up to `seq`. */
  const night = async (seq: number) => {
    await rm(served, { recursive: true, force: true });
    await replicationFolder(MONACO, served, seq);
  };
  const run = async () => {
    log.clear();
    return update(await loadConfig(configFile), { workers: 1 });
  };

  beforeAll(async () => {
    log.start();
    dir = await tempDir('update-file');
    served = join(dir, 'monaco-updates');
    await night(3047);
    configFile = await writeCfg('config.json', join(dir, 'out'), MONACO.extract, fileUrl(served));
    await build(await loadConfig(configFile), { workers: 1 });
  }, LONG);
  afterAll(async () => {
    log.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('nothing new on the server: nothing published', async () => {
    const before = await currentVersionDir(join(dir, 'out'));
    const r = await run();
    expect(r.published).toBe(false);
    expect(text()).toContain('update omt: up to date (sequence 3047, 2021-08-01T20:21:40Z)');
    expect(await currentVersionDir(join(dir, 'out'))).toEqual(before);
  }, LONG);

  it('a night with one change, then an empty night: the empty night re-packs and re-renders nothing', async () => {
    const out = join(dir, 'out');
    await night(3048);
    let r = await run();
    expect(r.tilesets).toEqual([{ id: 'omt', from: { sequence: 3047, timestamp: '2021-08-01T20:21:40Z' }, to: { sequence: 3048, timestamp: '2021-08-02T20:21:57Z' }, files: 1, changes: 1, base: fileUrl(served) }]);
    // 3048 changes one relation (a tag of NATO's, whose members are France's maritime borders): generated alone, before and after, it shows the same.
    expect(text()).toContain('vector omt: the change can change 0 tiles');
    expect(text()).toContain('vector omt: the change leaves every tile as it was, archive reused from the previous build');
    const v1 = (await currentVersionDir(out))!;
    expect((await readManifestOrEmpty(v1.dir)).osm?.omt).toMatchObject({ sequence: 3048, timestamp: '2021-08-02T20:21:57Z' });

    await night(3049);
    r = await run();
    expect(r.tilesets[0]).toMatchObject({ to: { sequence: 3049 }, files: 1, changes: 0 });
    expect(text()).toContain('vector omt: source unchanged, archive reused from the previous build');
    expect(text()).toMatch(/render osm-bright @1x: re-rendered 0 of \d+ metatiles \(unchanged/);
    const v2 = (await currentVersionDir(out))!;
    expect(v2.id).not.toBe(v1.id);
    const m2 = await readManifestOrEmpty(v2.dir);
    expect(m2.osm?.omt).toMatchObject({ sequence: 3049, timestamp: '2021-08-03T20:21:39Z' });
    // The same files, linked: nothing was written again.
    for (const a of ['data/omt.pmtiles', m2.tilesets.omt.mlt!.archive, m2.styles['osm-bright'].archives['1x.png'].archive]) expect((await stat(join(v2.dir, a))).ino).toBe((await stat(join(v1.dir, a))).ino);
  }, LONG);

  it('the rest of the month in one run (27 dailies, 15 empty) equals a fresh build of the osmium-updated extract; only metatiles over changed tiles re-render', async () => {
    const out = join(dir, 'out');
    const before = (await currentVersionDir(out))!;
    await night(3076);
    const r = await run();
    expect(r.tilesets[0]).toMatchObject({ from: { sequence: 3049 }, to: { sequence: 3076, timestamp: '2021-08-30T20:21:43Z' }, files: 27 });
    expect(text().match(/update omt: sequence \d+ \([^)]+\): 0 changed objects/g)).toHaveLength(15);
    // The month touches Monaco's coastline (a coastline way among the changed objects or their parents): the sea may change anywhere, so every tile is generated.
    expect(text()).toContain('vector omt: the change touches the coastline: generating every tile');
    const after = (await currentVersionDir(out))!;
    const m = await readManifestOrEmpty(after.dir);
    expect(m.osm?.omt).toEqual({ sequence: 3076, timestamp: '2021-08-30T20:21:43Z', replication: fileUrl(served) });
    // Applied change files are removed; the copy at 3076 is kept.
    const diffs = await readdir(join(out, '.work', 'update', 'omt', 'diffs'));
    expect(diffs).toHaveLength(1);
    expect(await readdir(join(out, '.work', 'update', 'omt', 'diffs', diffs[0]))).toEqual([]);

    const ref = await referenceExtract(MONACO, 3047, 3076, join(dir, 'reference.osm.pbf'));
    const refCfg = await writeCfg('reference.json', join(dir, 'reference-out'), ref, undefined, false);
    await build(await loadConfig(refCfg));
    const vr = (await currentVersionDir(join(dir, 'reference-out')))!;
    const tiles = await archiveTiles(join(after.dir, 'data/omt.pmtiles'));
    expect(tiles).toEqual(await archiveTiles(join(vr.dir, 'data/omt.pmtiles')));
    // The search index, updated night after night from the changed objects, equals the reference build's.
    expect(text()).toMatch(/search omt: (search index updated: \d+ objects touched|the change .* indexing everything)/);
    expect(indexContent(join(after.dir, 'data/omt.search.sqlite'))).toEqual(indexContent(join(vr.dir, 'data/omt.search.sqlite')));
    // The MLT archive equals the reference's, though only the tiles whose MVT bytes changed were encoded.
    expect(await archiveTiles(join(after.dir, 'data/omt.mlt.pmtiles'))).toEqual(await archiveTiles(join(vr.dir, 'data/omt.mlt.pmtiles')));
    const mlt = /omt\.mlt\.pmtiles: (\d+) MLT tiles \((\d+) encoded, (\d+) copied from the previous build\)/.exec(text());
    expect(mlt, text()).not.toBeNull();
    expect(Number(mlt![3])).toBeGreaterThan(0);

    const changed = await changedTiles(join(before.dir, 'data/omt.pmtiles'), join(after.dir, 'data/omt.pmtiles'));
    expect(changed.size).toBeGreaterThan(0);
    const e = expectedRerenders(m.styles['osm-bright'], STYLE.minzoom, STYLE.maxzoom, STYLE.metatile, STYLE.margin, changed);
    expect(e.dirty).toBeGreaterThan(0);
    expect(text()).toContain(`render osm-bright @1x: re-rendered ${e.dirty} of ${e.total} metatiles`);
  }, LONG);
});
