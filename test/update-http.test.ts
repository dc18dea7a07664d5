// `tilebake update` over HTTP (Debian's nginx serving the replication folder): Liechtenstein's
// Geofabrik extract of 2019-11-18 (sequence 2434) and the real dailies 2435–2437. Every bad input
// fails naming the URL or file with a non-zero exit while the current version stays served; an
// update killed mid-build runs again cleanly; the result equals a fresh build of the extract with
// the same diffs applied by osmium, and re-renders exactly the metatiles over changed vector tiles.
import { copyFile, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { tileRangeForBBox } from '../lib/tile-math.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { build } from '../pipeline/build.ts';
import { readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { freePort, startServe, type Nginx, type ServeProcess } from './fixtures/server/helpers.ts';
import { indexContent } from './fixtures/search.ts';
import { archiveTiles, tempDir } from './render-helpers.ts';
import { changedTiles, expectedRerenders, fileUrl, fixtureFile, LIECHTENSTEIN, referenceExtract, replicationFolder, runCli, serveReplication, writeUpdateConfig } from './update-helpers.ts';

const LONG = 900_000;
/** 2019-11-18T21:19:02Z and 2019-11-21T21:19:02Z: the times of sequences 2434 and 2437. */
const T2434 = Date.parse('2019-11-18T21:19:02Z') / 1000;
const T2437 = Date.parse('2019-11-21T21:19:02Z') / 1000;
/**
 * osm-bright at z14 over central Liechtenstein from Vaduz west to the Rhine, not the whole extract: 4
 * metatiles (42 tiles) instead of 8 (128). 2436 changes 13/4313/2876 and 14/8626/5753 (2435 and 2437
 * change no tile): 2 of the 4 metatiles load one, so the update re-renders some and keeps others.
 */
const STYLE = { minzoom: 14, maxzoom: 14, metatile: 4, margin: 64, bbox: [9.47, 47.1, 9.6, 47.17] as [number, number, number, number] };
/** A second style at the world's zooms z0–3 (7 metatiles). */
const WORLD_ZOOMS = { minzoom: 0, maxzoom: 3 };

describe.sequential('tilebake update over HTTP (Liechtenstein 2019-11-18 + dailies 2435–2437)', () => {
  let dir: string;
  let out: string;
  let configFile: string;
  let nginx: Nginx;
  let server: ServeProcess;
  let metricsPort: number;
  let v1: { id: string | undefined; dir: string };
  const log = vi.spyOn(process.stderr, 'write');

  /** A config over the extract with `replication` (osm-bright at z14 over STYLE.bbox, the world at z0–3, one browser). */
  const writeCfg = (name: string, replication: string | undefined, source = LIECHTENSTEIN.extract, styles = true) =>
    writeUpdateConfig(dir, name, { out, source, replication, style: styles ? STYLE : undefined, render: STYLE, world: styles ? WORLD_ZOOMS : undefined });
  const health = async () => (await fetch(`${server.url}/health`)).json() as Promise<{ data_age_seconds?: number; data?: Record<string, { sequence: number; timestamp: string; age_seconds: number }> }>;
  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

  beforeAll(async () => {
    log.mockImplementation(() => true);
    dir = await tempDir('update-http');
    out = join(dir, 'out');
    const root = join(dir, 'server');
    await replicationFolder(LIECHTENSTEIN, join(root, 'good'), 2437);
    nginx = await serveReplication(root, 'good/state.txt', [dir]);
    configFile = await writeCfg('config.json', `${nginx.url}good/`);
    const { loadConfig } = await import('../pipeline/config/index.ts');
    await build(await loadConfig(configFile), { out, workers: 1 });
    v1 = (await currentVersionDir(out))! as { id: string; dir: string };
    metricsPort = await freePort();
    server = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth', '--version-poll-ms', '200', '--metrics-port', String(metricsPort)]);
  }, LONG);
  afterAll(async () => {
    log.mockRestore();
    server?.proc.kill('SIGTERM');
    if (server) await server.exited;
    await nginx?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the build records the extract\'s replication state; /health and /metrics report the data\'s age', async () => {
    const m = await readManifestOrEmpty(v1.dir);
    expect(m.osm?.omt).toEqual({ sequence: 2434, timestamp: '2019-11-18T21:19:02Z', replication: `${nginx.url}good/` });
    const h = await health();
    expect(h.data?.omt.sequence).toBe(2434);
    expect(h.data?.omt.timestamp).toBe('2019-11-18T21:19:02Z');
    expect(Math.abs(h.data!.omt.age_seconds - (Date.now() / 1000 - T2434))).toBeLessThan(60);
    expect(h.data_age_seconds).toBe(h.data!.omt.age_seconds);
    expect(await metrics()).toMatch(new RegExp(`^tilebake_data_timestamp_seconds\\{tileset="omt"\\} ${T2434}$`, 'm'));
  });

  /** Run `update` with a replication folder that is wrong in one way; expect a clear failure and nothing changed. */
  async function expectFailure(replication: string | undefined, message: RegExp, source?: string, outDir = out): Promise<void> {
    const cfg = await writeCfg(`bad-${Math.random().toString(36).slice(2)}.json`, replication, source);
    const pointer = await readFile(join(outDir, 'current.json'), 'utf8');
    const builds = await readdir(join(outDir, 'builds'));
    const r = await runCli(['update', '--config', cfg, '--out', outDir]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await readFile(join(outDir, 'current.json'), 'utf8')).toBe(pointer);
    expect(await readdir(join(outDir, 'builds'))).toEqual(builds);
  }

  it('bad replication input: a clear message naming the URL or file, exit 1, the current version untouched and served', async () => {
    const root = join(dir, 'server');
    const url = (name: string, seq?: string) => `${nginx.url}${name}/${seq ?? ''}`;
    // A gap: 2436 is missing between 2435 and the newest, 2437 (file://).
    const gap = await replicationFolder(LIECHTENSTEIN, join(dir, 'gap'), 2437, [2436]);
    await expectFailure(fileUrl(gap), new RegExp(`${fileUrl(gap)}000/002/436\\.state\\.txt: not found .*sequence 2436 is missing on the server, which announces 2435–2437 after the build's 2434 \\(a gap in the sequence\\)`));
    // A 404 over HTTP: the state file is there, the change file is not.
    await replicationFolder(LIECHTENSTEIN, join(root, 'missing'), 2435);
    await rm(join(root, 'missing', '000/002/435.osc.gz'));
    await expectFailure(url('missing'), new RegExp(`${url('missing', '000/002/435.osc.gz')}: HTTP 404 Not Found`));
    // A truncated download (the first half of the gzip stream).
    await replicationFolder(LIECHTENSTEIN, join(root, 'truncated'), 2435);
    await truncate(join(root, 'truncated', '000/002/435.osc.gz'), 20_000);
    await expectFailure(url('truncated'), new RegExp(`${url('truncated', '000/002/435.osc.gz')}: truncated`));
    // Corrupt bytes in the middle of the stream (file://).
    const corrupt = await replicationFolder(LIECHTENSTEIN, join(dir, 'corrupt'), 2435);
    const bytes = await readFile(fixtureFile(LIECHTENSTEIN, 2435, 'osc.gz'));
    for (let i = 10_000; i < 10_400; i++) bytes[i] ^= 0x5a;
    await writeFile(join(corrupt, '000/002/435.osc.gz'), bytes);
    await expectFailure(fileUrl(corrupt), new RegExp(`${fileUrl(corrupt)}000/002/435\\.osc\\.gz: corrupt`));
    // A whole gzip stream that is not an OsmChange document.
    await replicationFolder(LIECHTENSTEIN, join(root, 'notxml'), 2435);
    await writeFile(join(root, 'notxml', '000/002/435.osc.gz'), gzipSync('<html>a proxy\'s error page</html>'));
    await expectFailure(url('notxml'), new RegExp(`${url('notxml', '000/002/435.osc.gz')}: not a readable OsmChange file \\(osmium:`));
    // A server whose newest state is older than the extract.
    await replicationFolder(LIECHTENSTEIN, join(root, 'older'), 2435);
    await writeFile(join(root, 'older', 'state.txt'), 'timestamp=2019-11-17T21\\:19\\:02Z\nsequenceNumber=2433\n');
    await expectFailure(url('older'), new RegExp(`${url('older', 'state.txt')}: the server's newest state \\(sequence 2433, 2019-11-17T21:19:02Z\\) is older than the build's data \\(sequence 2434`));
    // Another update running on the folder (its lock names a live process: this test's).
    await writeFile(join(out, '.work', 'update.lock'), `${process.pid}\n`);
    await expectFailure(`${nginx.url}good/`, new RegExp(`update\\.lock: another \`tilebake update\` \\(pid ${process.pid}\\) is running on this output folder`));
    await rm(join(out, '.work', 'update.lock'));
    // Nothing is downloaded into the build's copy: the copy at 2434 only.
    expect((await readdir(join(out, '.work', 'update', 'omt'))).filter((n) => n.endsWith('.osm.pbf'))).toEqual(['2434.osm.pbf']);
    // Still served, still the first version.
    expect((await health()).data?.omt.sequence).toBe(2434);
    expect((await fetch(`${server.url}/data/omt/14/8625/5753.pbf`)).status).toBe(200);
  }, LONG);

  it('an extract without replication information and none configured: a message naming the file and the config field', async () => {
    // osmium extract writes no osmosis_replication_* header: the Belize fixture was cut with it (4 KB, a cheap build).
    const small = join(dir, 'belize-reef.osm.pbf');
    await copyFile(join(import.meta.dirname, 'fixtures', 'osm', 'belize-reef.osm.pbf'), small);
    expect((await readOsmHeader(small)).replication).toBeUndefined();
    const smallOut = join(dir, 'small-out');
    const cfg = await writeCfg('small.json', undefined, small, false);
    const { loadConfig } = await import('../pipeline/config/index.ts');
    await build(await loadConfig(cfg), { out: smallOut });
    await expectFailure(undefined, new RegExp(`${small}: the extract has no replication information .* set \\$\\.tilesets\\.omt\\.replication in `), small, smallOut);
  }, LONG);

  it('killed during its build, run again: 2435–2437 applied, equal to a fresh build of the osmium-updated extract, only metatiles over changed tiles re-rendered, served', async () => {
    const pointer = await readFile(join(out, 'current.json'), 'utf8');
    const killed = await runCli(['update', '--config', configFile], (text, kill) => {
      if (text.includes('tilemaker reading')) kill();
    });
    expect(killed.code, killed.stderr).toBeNull();
    expect(killed.stderr).toMatch(/sequence 2435 \(2019-11-19T21:18:02Z\): \d+ changed objects/);
    expect(await readFile(join(out, 'current.json'), 'utf8')).toBe(pointer);
    expect((await health()).data?.omt.sequence).toBe(2434);

    const r = await runCli(['update', '--config', configFile]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('update omt: sequence 2434 → 2437 (2019-11-21T21:19:02Z): 3 change files');
    // The vector stage generated only the tiles the change files can change and copied the others.
    expect(r.stderr).toMatch(/vector omt: the change can change [1-9]\d* tiles/);
    expect(r.stderr).toMatch(/vector omt: generated \d+ changed tiles \(\d+ not empty\) and copied the others from the previous archive/);
    // The change files were downloaded once: the second run verified and used the first run's.
    const access = await nginx.accessLog();
    for (const s of ['435', '436', '437']) expect(access.split(`/good/000/002/${s}.osc.gz`).length - 1, access).toBe(1);

    const v2 = (await currentVersionDir(out))!;
    expect(v2.id).not.toBe(v1.id);
    const m2 = await readManifestOrEmpty(v2.dir);
    expect(m2.osm?.omt).toEqual({ sequence: 2437, timestamp: '2019-11-21T21:19:02Z', replication: `${nginx.url}good/` });
    expect((await readdir(join(out, '.work', 'update', 'omt'))).filter((n) => n.endsWith('.osm.pbf')).sort()).toEqual(['2437.osm.pbf', 'extract.osm.pbf']);

    // Every vector tile equals a fresh build of the extract with the same diffs applied by osmium.
    const ref = await referenceExtract(LIECHTENSTEIN, 2434, 2437, join(dir, 'reference.osm.pbf'));
    const refOut = join(dir, 'reference-out');
    const { loadConfig } = await import('../pipeline/config/index.ts');
    await build(await loadConfig(await writeCfg('reference.json', undefined, ref, false)), { out: refOut });
    const vr = (await currentVersionDir(refOut))!;
    const tiles = await archiveTiles(join(v2.dir, 'data/omt.pmtiles'));
    expect(tiles.size).toBeGreaterThan(100);
    expect(tiles).toEqual(await archiveTiles(join(vr.dir, 'data/omt.pmtiles')));
    // The search index too, made from the night's changed objects (or all again when a settlement changed).
    expect(r.stderr).toMatch(/search omt: (search index updated: \d+ objects touched|the change .* indexing everything)/);
    expect(indexContent(join(v2.dir, 'data/omt.search.sqlite'))).toEqual(indexContent(join(vr.dir, 'data/omt.search.sqlite')));

    // Re-rendered: exactly the metatiles whose view loads a changed vector tile.
    const changed = await changedTiles(join(v1.dir, 'data/omt.pmtiles'), join(v2.dir, 'data/omt.pmtiles'));
    const e = expectedRerenders(m2.styles['osm-bright'], STYLE.minzoom, STYLE.maxzoom, STYLE.metatile, STYLE.margin, changed);
    expect(e.dirty).toBeGreaterThan(0);
    expect(e.dirty).toBeLessThan(e.total);
    expect(r.stderr).toContain(`render osm-bright @1x: re-rendered ${e.dirty} of ${e.total} metatiles (data: ${changed.size} source tiles changed)`);

    // The world's z0–6 was not built again, and its tiles beyond the extract neither changed nor were
    // drawn again: every changed vector tile lies over the extract, and the world style re-rendered only
    // the metatiles whose view loads one (the rest of its tiles are the previous version's).
    expect(r.stderr).not.toContain("building the world's");
    const region = m2.tilesets.omt.region!;
    for (const key of changed) {
      const [z, x, y] = key.split('/').map(Number);
      const t = tileRangeForBBox(region, z);
      expect(x >= t.minX && x <= t.maxX && y >= t.minY && y <= t.maxY, `${key} over the extract`).toBe(true);
    }
    const w = expectedRerenders(m2.styles.world, WORLD_ZOOMS.minzoom, WORLD_ZOOMS.maxzoom, STYLE.metatile, STYLE.margin, changed);
    expect(w.total).toBe(7);
    expect(r.stderr).toMatch(new RegExp(`render world @1x: re-rendered ${w.dirty} of 7 metatiles`));
    const [before, after] = [await archiveTiles(join(v1.dir, 'styles/world/1x.png.pmtiles')), await archiveTiles(join(v2.dir, 'styles/world/1x.png.pmtiles'))];
    expect(before.size).toBe(1 + 4 + 16 + 64);
    const same = [...before].filter(([id, h]) => after.get(id) === h).length;
    expect(same).toBeGreaterThanOrEqual(before.size - w.dirty * 16);

    // The running server follows: /health and the gauge show 2437.
    const deadline = Date.now() + 60_000;
    while ((await health()).data?.omt.sequence !== 2437 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 200));
    expect((await health()).data?.omt.timestamp).toBe('2019-11-21T21:19:02Z');
    expect(await metrics()).toMatch(new RegExp(`^tilebake_data_timestamp_seconds\\{tileset="omt"\\} ${T2437}$`, 'm'));
  }, LONG);
});
