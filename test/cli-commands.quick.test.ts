import Database from 'better-sqlite3';
import { currentVersionDir } from '../lib/build-version.ts';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { parseManifest } from '../lib/manifest.ts';
import { runCli } from './fixtures/cli.ts';

const CONFIG = resolve('data/sample/config.json');
const MONACO = resolve('data/sample/monaco_omt.mbtiles');

/** Tiles per zoom of the Monaco MBTiles, counted with SQL. */
function monacoCounts(): Map<number, number> {
  const db = new Database(MONACO, { readonly: true });
  const rows = db.prepare('SELECT zoom_level AS z, COUNT(*) AS n FROM tiles GROUP BY zoom_level').all() as { z: number; n: number }[];
  db.close();
  return new Map(rows.map((r) => [r.z, r.n]));
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('--help', () => {
  const commands: [string[], string[]][] = [
    [[], ['build', 'vector', 'inspect', 'serve', 'elevation', 'merge', 'plan', 'shard', 'publish', 'update', 'usage', 'pack', 'pack-apply']],
    [['plan'], ['--config', '--run', '--shards']],
    [['shard'], ['--run', '--index', '--scratch', 'SLURM_ARRAY_TASK_ID', 'JOB_COMPLETION_INDEX']],
    [['publish'], ['--run', '--out', '--archive']],
    [['build'], ['--config', '--out', '--only', 'vector', 'render', 'elevation']],
    [['vector'], ['<input>', '<output>', '--name', '--attribution']],
    [['inspect'], ['<archive>', '--json']],
    [['serve'], ['--out', '--port', '--routing-port', '--public-url', '--tokens-file', '--auth']],
    [['elevation'], ['--out', '--precision']],
    [['merge'], ['<output>', '<partials..>']],
    [['update'], ['--config', '--out', '--keep', 'replication']],
    [['pack'], ['--out', '--to', '--bbox', '--geojson', '--format', '--since', '--dry-run']],
  ];
  for (const [cmd, words] of commands) {
    it(`tilebake ${cmd.join(' ')} --help`, async () => {
      const r = await runCli([...cmd, '--help']);
      expect(r.code).toBe(0);
      for (const w of words) expect(r.stdout).toContain(w);
    });
  }

  it('an unknown command exits non-zero', async () => {
    const r = await runCli(['bake']);
    expect(r.code).not.toBe(0);
  });
});

describe('tilebake build --only vector', () => {
  it('writes <out>/data/openmaptiles.pmtiles and a manifest entry, keeping other manifest sections', async () => {
    const out = join(dir, 'build');
    await mkdir(out);
    // A manifest from an earlier render: --only vector must keep its styles section.
    const earlier = { version: 1, generatedAt: '2020-01-01T00:00:00Z', tilesets: {}, styles: { kept: { style: 'styles/kept/style.json', minzoom: 0, maxzoom: 1, bounds: [0, 0, 1, 1], center: [0, 0, 0], archives: {} } } };
    await writeFile(join(out, 'manifest.json'), JSON.stringify(earlier));

    const r = await runCli(['build', '--config', CONFIG, '--only', 'vector', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    // The build is a new version of the folder (lib/build-version.ts); the legacy files stay as they were.
    const v = (await currentVersionDir(out))!.dir;
    expect(v).toMatch(/builds\/\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    // The sample's vector tilesets (Monaco, Nassau), the search index of the Monaco extract its tileset was made from
    // ("search": {"source": …}); its imagery is the imagery stage's.
    expect((await readdir(join(v, 'data'))).sort()).toEqual(['nassau.pmtiles', 'openmaptiles.pmtiles', 'openmaptiles.search.sqlite']);
    const m = parseManifest(await readFile(join(v, 'manifest.json'), 'utf8'), 'manifest');
    const t = m.tilesets.openmaptiles;
    expect(t.search).toMatchObject({ index: 'data/openmaptiles.search.sqlite', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(t.search!.entries).toBeGreaterThan(1000);
    expect(t).toMatchObject({ archive: 'data/openmaptiles.pmtiles', kind: 'vector', format: 'pbf', name: 'OpenMapTiles Monaco', minzoom: 0, maxzoom: 14, tiles: 23 });
    expect(t.bounds).toEqual([7.409205, 43.72335, 7.448637, 43.75169]);
    expect((t.vector_layers as { id: string }[]).some((l) => l.id === 'transportation')).toBe(true);
    expect(t.attribution).toContain('OpenStreetMap contributors');
    expect(m.styles.kept).toBeDefined();
    // Nothing from the other stages ran.
    expect(m.elevation).toBeUndefined();
    expect(m.tilesets.terrain).toBeUndefined();
    expect(m.tilesets.landsat).toBeUndefined();

    const a = await openArchiveFile(join(v, t.archive));
    try {
      expect(a.header.numAddressedTiles).toBe(23);
      expect(t.bytes).toBe((await readFile(join(v, t.archive))).length);
    } finally {
      await a.close();
    }
  });
});

describe('tilebake inspect', () => {
  it('prints tile counts per zoom matching the MBTiles (z0–12: 1, z13: 4, z14: 6)', async () => {
    const archive = join(dir, 'monaco.pmtiles');
    const packed = await runCli(['vector', MONACO, archive]);
    expect(packed.code, packed.stderr).toBe(0);

    const r = await runCli(['inspect', archive]);
    expect(r.code, r.stderr).toBe(0);
    const counts = new Map<number, number>();
    for (const m of r.stdout.matchAll(/^\s+z(\d+)\s+(\d+) tiles/gm)) counts.set(Number(m[1]), Number(m[2]));
    const expected = monacoCounts();
    expect([...counts.entries()].sort((a, b) => a[0] - b[0])).toEqual([...expected.entries()].sort((a, b) => a[0] - b[0]));
    for (let z = 0; z <= 12; z++) expect(counts.get(z)).toBe(1);
    expect(counts.get(13)).toBe(4);
    expect(counts.get(14)).toBe(6);
    expect(r.stdout).toMatch(/tileType\s+Mvt/);
    expect(r.stdout).toMatch(/tileCompression\s+Gzip/);
    expect(r.stdout).toContain('"vector_layers"');

    const j = await runCli(['inspect', archive, '--json']);
    expect(j.code).toBe(0);
    const report = JSON.parse(j.stdout) as { zooms: { zoom: number; tiles: number }[]; header: { numAddressedTiles: number }; metadata: { name: string } };
    expect(report.zooms.find((z) => z.zoom === 14)?.tiles).toBe(6);
    expect(report.header.numAddressedTiles).toBe(23);
    expect(report.metadata.name).toBe('OpenMapTiles');
  });

  it('refuses a file that is not a PMTiles archive, naming it', async () => {
    const r = await runCli(['inspect', MONACO]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(MONACO);
    expect(r.stderr).toMatch(/not a PMTiles archive/);
  });
});
