/**
 * The compiled CLI (scripts/build-js.mjs writes dist/; bin/tilebake.js runs it when current): a
 * distributed build of one metatile from a small OpenStreetMap extract (plan with the vector and
 * elevation stages, a shard rendering it, publish) and `serve` of the result run without tsx in any
 * process or thread, and find every file they read beside the sources from the compiled chunks: the
 * OSM profile, data/naturalearth, package.json, the render page, the preview page, maplibre-gl's
 * dist. A dist/ older than its sources runs the sources through tsx instead.
 *
 * The checkout is a temp folder of symlinks to this one's sources with its own bin/ and dist/ (so the
 * test neither needs nor touches this checkout's dist/). Every command runs with the preload
 * fixtures/no-ts-loader.mjs, which fails any load of tsx and logs each process and thread it ran in.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, request } from './fixtures/server/http.ts';
import { startServe } from './fixtures/server/serve.ts';
import { readTile, SAMPLE, tempDir } from './render-helpers.ts';

const REPO = resolve(import.meta.dirname, '..');
const GUARD = join(REPO, 'test/fixtures/no-ts-loader.mjs');
/** What the temp checkout links to this one. */
const LINKED = ['cli', 'data', 'export', 'lib', 'node_modules', 'package.json', 'pipeline', 'static-server', 'workers'];
const exec = promisify(execFile);

let pkg: string;
let work: string;
let guardLog: string;
let cli: string;

/** Run the temp checkout's CLI (under the guard unless `guard` is false); resolves with its output, rejects on a non-zero exit. */
function tilebake(args: string[], guard = true): Promise<{ stdout: string; stderr: string }> {
  const node = guard ? ['--import', GUARD, cli] : [cli];
  return exec(process.execPath, [...node, ...args], { cwd: work, env: { ...process.env, CI: '1', NO_TS_LOADER_LOG: guardLog } });
}

/** The guard's log: command → the thread ids it ran in, per process. */
async function guardRuns(): Promise<Map<string, Map<number, number[]>>> {
  const lines = (await readFile(guardLog, 'utf8')).trim().split('\n').map((l) => l.split(' '));
  const commandOf = new Map(lines.filter(([, , tid]) => tid === '0').map(([cmd, pid]) => [pid, cmd]));
  const runs = new Map<string, Map<number, number[]>>();
  for (const [, pid, tid] of lines) {
    const cmd = commandOf.get(pid!)!;
    if (!runs.has(cmd)) runs.set(cmd, new Map());
    const threads = runs.get(cmd)!;
    threads.set(Number(pid), [...(threads.get(Number(pid)) ?? []), Number(tid)]);
  }
  return runs;
}

/** Layer name → features' `name` properties of a gzipped vector tile. */
function layers(tile: Uint8Array): Map<string, unknown[]> {
  const vt = new VectorTile(new PbfReader(gunzipSync(tile)));
  return new Map(Object.entries(vt.layers).map(([name, l]) => [name, Array.from({ length: l.length }, (_, i) => l.feature(i).properties.name)]));
}

describe.sequential('the compiled CLI', () => {
  beforeAll(async () => {
    pkg = await tempDir('compiled');
    work = await tempDir('compiled-work');
    guardLog = join(work, 'guard.log');
    for (const name of LINKED) await symlink(join(REPO, name), join(pkg, name));
    await mkdir(join(pkg, 'bin'));
    for (const f of ['tilebake.js', 'dist.js']) await copyFile(join(REPO, 'bin', f), join(pkg, 'bin', f));
    cli = join(pkg, 'bin', 'tilebake.js');
    const { stdout } = await exec(process.execPath, [join(REPO, 'scripts/build-js.mjs'), '--root', pkg]);
    expect(stdout).toMatch(/^build-js: dist\/ from \d+ source files/);
    // Current now: a second run builds nothing.
    expect((await exec(process.execPath, [join(REPO, 'scripts/build-js.mjs'), '--root', pkg])).stdout).toBe('');
  });

  afterAll(async () => {
    for (const dir of [pkg, work]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('plan, shard, publish and serve run without tsx and find their files', async () => {
    // A street and a village in Monaco: tilemaker runs the OSM profile, Natural Earth fills z0-6.
    const opl = [
      'n1 v1 Tplace=village,name=Compiled%20%Village x7.4200000 y43.7300000',
      'n2 v1 T x7.4210000 y43.7310000',
      'n3 v1 T x7.4220000 y43.7310000',
      'n4 v1 T x7.4230000 y43.7320000',
      'w1 v1 Thighway=residential,name=Rue%20%Bundle Nn2,n3,n4',
    ];
    await writeFile(join(work, 'tiny.opl'), `${opl.join('\n')}\n`);
    await exec('osmium', ['cat', join(work, 'tiny.opl'), '-o', join(work, 'tiny.osm.pbf')]);
    const config = {
      out: join(work, 'out'),
      tilesets: { openmaptiles: { source: join(work, 'tiny.osm.pbf') } },
      styles: { 'osm-bright': { style: join(SAMPLE, 'styles/osm-bright/style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom: 0, scales: [1], formats: ['png'] } },
      fonts: join(SAMPLE, 'fonts'),
      render: { metatile: 4, margin: 64 },
      elevation: { sources: [join(SAMPLE, 'dem/N43E007.hgt')], precision: 0.1, terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 0, maxzoom: 6 } },
    };
    await writeFile(join(work, 'config.json'), JSON.stringify(config));
    const run = join(work, 'run');
    const out = join(work, 'out');
    const stderr: string[] = [];
    stderr.push((await tilebake(['plan', '--config', join(work, 'config.json'), '--run', run, '--shards', '1'])).stderr);
    stderr.push((await tilebake(['shard', '--run', run, '--index', '0', '--workers', '1'])).stderr);
    stderr.push((await tilebake(['publish', '--run', run, '--out', out])).stderr);
    for (const s of stderr) expect(s).not.toContain('through tsx');

    // package.json: the version in run.json.
    const version = (JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    expect((JSON.parse(await readFile(join(run, 'run.json'), 'utf8')) as { tilebake: string }).tilebake).toBe(version);
    // The OSM profile (the street's name at z14) and Natural Earth (the ocean at z0).
    const current = (JSON.parse(await readFile(join(out, 'current.json'), 'utf8')) as { path: string }).path;
    const vector = join(out, current, 'data/openmaptiles.pmtiles');
    expect(layers(await readTile(vector, 14, 8529, 5974)).get('transportation_name')).toContain('Rue Bundle');
    expect(layers(await readTile(vector, 0, 0, 0)).get('water')?.length).toBeGreaterThan(0);
    // The render page: the shard's metatile; the elevation workers: terrain tiles.
    const png = await readTile(join(out, current, 'styles/osm-bright/1x.png.pmtiles'), 0, 0, 0);
    expect(Buffer.from(png.subarray(0, 8)).toString('hex')).toBe('89504e470d0a1a0a');
    expect((await readTile(join(out, current, 'data/terrain.pmtiles'), 6, 33, 23)).length).toBeGreaterThan(100);

    // serve with two HTTP workers: the preview page and maplibre-gl's files.
    const server = await startServe(['--out', out, '--port', String(await freePort()), '--host', '127.0.0.1', '--no-auth', '--workers', '2'], { NO_TS_LOADER_LOG: guardLog }, ['--import', GUARD, cli]);
    try {
      const page = await request(`${server.url}/`);
      expect(page.status).toBe(200);
      expect(page.body.toString()).toBe(await readFile(join(REPO, 'static-server/preview/index.html'), 'utf8'));
      const maplibre = await request(`${server.url}/maplibre/maplibre-gl.mjs`);
      expect(maplibre.status).toBe(200);
      expect(maplibre.body.equals(await readFile(join(REPO, 'node_modules/maplibre-gl/dist/maplibre-gl.mjs')))).toBe(true);
      expect((await request(`${server.url}/styles/osm-bright/0/0/0.png`)).body.equals(Buffer.from(png))).toBe(true);
      // Above the baked zoom: upscaled by sharp from the compiled chunks.
      const upscaled = await request(`${server.url}/styles/osm-bright/1/0/0.png`);
      expect(upscaled.status).toBe(200);
      expect(upscaled.headers['x-tilebake-source-zoom']).toBe('0');
      expect(await sharp(upscaled.body).metadata()).toMatchObject({ format: 'png', width: 256, height: 256 });
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
    expect(server.output()).not.toContain('through tsx');

    // The guard ran in each command, in the worker threads (elevation pool, render thread) and in serve's workers.
    const runs = await guardRuns();
    const threads = (cmd: string) => [...(runs.get(cmd)?.values() ?? [])].flat();
    expect(threads('plan').filter((t) => t > 0).length, 'elevation pool threads').toBeGreaterThan(0);
    expect(threads('shard').filter((t) => t > 0).length, 'render thread').toBeGreaterThan(0);
    expect(runs.get('publish')?.size).toBe(1);
    expect(runs.get('serve')?.size, 'serve: the primary and 2 workers').toBe(3);
  });

  test('a dist/ older than its sources runs the sources through tsx (and the guard fails that)', async () => {
    const manifest = join(pkg, 'dist', 'manifest.json');
    const m = JSON.parse(await readFile(manifest, 'utf8')) as { builtAt: number; inputs: string[] };
    await writeFile(manifest, JSON.stringify({ ...m, builtAt: 0 }));
    const guarded = await tilebake(['--help']).then(
      () => undefined,
      (e: { stderr: string }) => e.stderr,
    );
    expect(guarded).toContain('no-ts-loader: tsx loaded');
    const { stdout, stderr } = await tilebake(['--help'], false);
    expect(stdout).toContain('tilebake <command>');
    expect(stderr).toMatch(/^tilebake: dist\/ is older than \S+\.ts: running the sources through tsx/);
    // scripts/build-js.mjs builds it again.
    expect((await exec(process.execPath, [join(REPO, 'scripts/build-js.mjs'), '--root', pkg])).stdout).toMatch(/^build-js: .*changed\)/);
    expect((await tilebake(['--help'])).stderr).toBe('');
  });
});
