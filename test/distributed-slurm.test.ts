/**
 * Distributed builds end to end on a real one-node Slurm cluster (test/fixtures/slurm.ts): plan n = 4 →
 * deploy/slurm/submit.sh (array of `tilebake shard`, two at a time, and a publish job with
 * afterok + kill-on-invalid-dep) → the published archives equal a one-machine `tilebake build` byte
 * for byte. A shard that fails once with 75 is retried inside its task; re-running the array renders
 * nothing; two concurrent runs of one index leave identical files; a shard failing with 78 cancels
 * publish while `tilebake serve` keeps serving the current version; the next incremental build after
 * the distributed one re-renders only metatiles over changed tiles.
 *
 * Config: the Monaco sample, osm-bright at z12–14, 1x and @2x, PNG and JPEG, and an orthophoto no style
 * draws, warped by the shards (the elevation stage and the other styles would only add minutes; they run
 * through the same stage records).
 */
import { spawn } from 'node:child_process';
import { copyFile, readdir, readFile, rm, writeFile, chmod } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { lonLatToTile } from '../lib/tile-math.ts';
import { HRO } from './fixtures/imagery.ts';
import { CLI, runCli } from './fixtures/cli.ts';
import { startSlurm, type SlurmCluster } from './fixtures/slurm.ts';
import { startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { copyTile, readTile, SAMPLE, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const SUBMIT = join(ROOT, 'deploy/slurm/submit.sh');
const LONG = 600_000;
const N = 4;
const CITY = { z: 14, ...lonLatToTile(7.4196, 43.7335, 14) };

/** Run a command; resolves with its exit code and output (never rejects). */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => done({ code: code ?? 1, out }));
  });
}

/** Run the CLI (with `env`); resolves with its exit code and output (never rejects). */
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { env }).then((r) => ({ code: r.code, out: r.output }));

/** Every file of a version folder, relative path → bytes (manifest.json without its generatedAt). */
async function versionFiles(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    let bytes = await readFile(path);
    if (e.name === 'manifest.json') bytes = Buffer.from(JSON.stringify({ ...JSON.parse(bytes.toString()), generatedAt: undefined }));
    out.set(path.slice(dir.length + 1), bytes.toString('base64'));
  }
  return out;
}

async function slurmLogs(dir: string): Promise<string> {
  const names = (await readdir(dir)).filter((n) => n.startsWith('slurm-')).sort();
  return (await Promise.all(names.map(async (n) => `--- ${n}\n${await readFile(join(dir, n), 'utf8')}`))).join('\n');
}

let slurm: SlurmCluster;
let dir: string;
let config: string;
let runDir: string;
let out: string;
let ref: string;
let logDir: string;
let wrapper: string;
let serve: ServeProcess | undefined;

/** submit.sh --wait with the test's wrapper as TILEBAKE and two one-CPU tasks at a time. */
function submit(env: Record<string, string> = {}) {
  return run('/bin/bash', [SUBMIT, '--run', runDir, '--out', out, '--parallel', '2', '--wait', '--', '-c', '1', '-o', join(logDir, 'slurm-%A_%a.out')], {
    ...slurm.env,
    TILEBAKE: wrapper,
    TILEBAKE_RETRY_DELAY: '1',
    TILEBAKE_WORKERS: '1',
    // The shards' log lines are asserted on.
    TILEBAKE_QUIET: '',
    ...env,
  });
}

describe.sequential('distributed build on a one-node Slurm cluster', () => {
  beforeAll(async () => {
    slurm = await startSlurm();
    dir = await tempDir('dist-slurm');
    logDir = join(dir, 'logs');
    await run('/bin/mkdir', ['-p', logDir]);
    // The source is a copy: the incremental test changes two of its tiles.
    const source = join(dir, 'monaco.mbtiles');
    await copyFile(join(SAMPLE, 'monaco_omt.mbtiles'), source);
    const raw = sampleConfig(join(dir, 'one'), { minzoom: 12, maxzoom: 14 }, { metatile: 4, margin: 64, timeoutMs: 120_000 });
    // And imagery no style draws (the 15 cm orthophoto at z19–20 and @2x z19): the shards warp it, publish merges it.
    raw.tilesets = { openmaptiles: { source, encodings: ['mvt', 'mlt'] }, ortho: { source: HRO, format: 'png', minzoom: 19 } };
    config = (await writeConfig(dir, 'config.json', raw)).file;
    runDir = join(dir, 'run');
    out = join(dir, 'out');
    // The test hook: TILEBAKE for the Slurm scripts. Index $FAIL75 exits 75 once (a marker file
    // remembers it), index $FAIL78 exits 78 every time; everything else runs tilebake.
    wrapper = join(dir, 'tilebake-hook.sh');
    await writeFile(
      wrapper,
      `#!/bin/bash
i=\${SLURM_ARRAY_TASK_ID:-none}
if [ "$1" = shard ] && [ "$i" = "\${FAIL75:-}" ] && [ ! -e "${dir}/failed-once-$i" ]; then touch "${dir}/failed-once-$i"; echo "hook: shard $i exits 75" >&2; exit 75; fi
if [ "$1" = shard ] && [ "$i" = "\${FAIL78:-}" ]; then echo "hook: shard $i exits 78" >&2; exit 78; fi
exec "${process.execPath}" "${CLI}" "$@"
`,
    );
    await chmod(wrapper, 0o755);
    const one = await cli(['build', '--config', config, '--workers', '1']);
    expect(one.code, one.out).toBe(0);
    ref = (await currentVersionDir(join(dir, 'one')))!.dir;
    const planned = await cli(['plan', '--config', config, '--run', runDir, '--shards', String(N)]);
    expect(planned.code, planned.out).toBe(0);
  }, LONG);

  afterAll(async () => {
    serve?.proc.kill('SIGTERM');
    if (serve) await serve.exited;
    await slurm?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('sbatch array of 4 shards (one fails once with 75 and is retried) → dependent publish = a one-machine build, byte for byte', async () => {
    const r = await submit({ FAIL75: '2' });
    const logs = await slurmLogs(logDir);
    expect(r.code, `${r.out}\n${logs}\n${await slurm.logs()}`).toBe(0);
    expect(logs).toContain('hook: shard 2 exits 75');
    expect(logs).toContain('tilebake shard exited 75 (transient): retry 1 of 3');
    for (let i = 0; i < N; i++) expect(JSON.parse(await readFile(join(runDir, 'shards', String(i), 'DONE.json'), 'utf8')).index).toBe(i);
    const published = (await currentVersionDir(out))!;
    const got = await versionFiles(published.dir);
    const want = await versionFiles(ref);
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [k, v] of want) expect(got.get(k) === v, `${k} differs from the one-machine build`).toBe(true);
    expect([...got.keys()].filter((k) => k.endsWith('.pmtiles') && k.startsWith('styles/'))).toHaveLength(4);
    // The MLT archive, made by plan's vector stage, is published with the version (and equal to the one-machine build's, above).
    expect(got.has('data/openmaptiles.mlt.pmtiles')).toBe(true);
    // The imagery was warped by the shards, each its share of the batches (equal to the one-machine build's, above).
    expect(Object.keys(JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')).imagery)).toEqual(['data/ortho', 'data/ortho@2x']);
    const shares = await Promise.all([...Array(N).keys()].map(async (i) => JSON.parse(await readFile(join(runDir, 'shards', String(i), 'DONE.json'), 'utf8')).imagery['data/ortho'].tiles as number));
    expect(shares.filter((n) => n > 0).length).toBeGreaterThan(1);
    expect(shares.reduce((a, b) => a + b, 0)).toBe(JSON.parse(Buffer.from(got.get('manifest.json')!, 'base64').toString()).tilesets.ortho.tiles);
  }, LONG);

  it('publish --archive merges one archive into RUN/merged/ (fan-in), equal to the published one', async () => {
    const r = await cli(['publish', '--run', runDir, '--out', out, '--archive', 'osm-bright/2x.jpg']);
    expect(r.code, r.out).toBe(0);
    const published = (await currentVersionDir(out))!;
    expect((await readFile(join(runDir, 'merged/osm-bright/2x.jpg.pmtiles'))).equals(await readFile(join(published.dir, 'styles/osm-bright/2x.jpg.pmtiles')))).toBe(true);
    const bad = await cli(['publish', '--run', runDir, '--out', out, '--archive', 'osm-bright/3x.png']);
    expect(bad.code).toBe(78);
    expect(bad.out).toContain('--archive: "osm-bright/3x.png" is not an archive of run');
  }, LONG);

  it('re-running the whole array renders 0 metatiles', async () => {
    await rm(logDir, { recursive: true, force: true });
    await run('/bin/mkdir', ['-p', logDir]);
    const r = await submit();
    const logs = await slurmLogs(logDir);
    expect(r.code, `${r.out}\n${logs}`).toBe(0);
    expect(logs.match(/already done \(shards\/\d\/DONE\.json matches run\.json\): rendered 0 metatiles/g)).toHaveLength(N);
    expect(logs).not.toMatch(/re-rendered [1-9]/);
    // Its publish used the fan-in result for osm-bright/2x.jpg and still equals the one-machine build.
    expect(await versionFiles((await currentVersionDir(out))!.dir)).toEqual(await versionFiles(ref));
  }, LONG);

  it('two concurrent runs of one index leave identical files', async () => {
    const before = await versionFiles(join(runDir, 'shards', '1'));
    await rm(join(runDir, 'shards', '1'), { recursive: true });
    const [a, b] = await Promise.all([0, 1].map((k) => cli(['shard', '--run', runDir, '--index', '1', '--workers', '1', '--scratch', join(dir, `scratch-${k}`)])));
    expect(a.code, a.out).toBe(0);
    expect(b.code, b.out).toBe(0);
    expect(await versionFiles(join(runDir, 'shards', '1'))).toEqual(before);
  }, LONG);

  it('a shard failing with 78 cancels publish; tilebake serve keeps serving the current version', async () => {
    serve = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth', '--version-poll-ms', '500']);
    const tile = `/styles/osm-bright/${CITY.z}/${CITY.x}/${CITY.y}.png`;
    const served = await fetch(`${serve.url}${tile}`);
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(await readTile(join(ref, 'styles/osm-bright/1x.png.pmtiles'), CITY.z, CITY.x, CITY.y)))).toBe(true);
    const pointer = await readFile(join(out, 'current.json'), 'utf8');
    await rm(join(runDir, 'shards', '3', 'DONE.json'));
    const r = await submit({ FAIL78: '3' });
    expect(r.code).not.toBe(0);
    const logs = await slurmLogs(logDir);
    expect(logs).toContain('hook: shard 3 exits 78');
    const jobs = await run('/usr/bin/squeue', ['-h', '-t', 'all', '-o', '%j %T'], slurm.env);
    expect(jobs.out).toMatch(/tilebake-publish CANCELLED/);
    expect(r.out).toMatch(/submit\.sh: publish job \d+ ended CANCELLED/);
    expect(await readFile(join(out, 'current.json'), 'utf8')).toBe(pointer);
    expect((await fetch(`${serve.url}${tile}`)).status).toBe(200);
    // Publish by hand is refused too (75: shard 3 not done) and changes nothing.
    const p = await cli(['publish', '--run', runDir, '--out', out]);
    expect(p.code).toBe(75);
    expect(p.out).toContain('publish: shards 3 of 4 are not done');
    expect(await readFile(join(out, 'current.json'), 'utf8')).toBe(pointer);
  }, LONG);

  it('the next incremental build after the distributed one re-renders only metatiles over changed tiles', async () => {
    // A z13 vector tile (drawn by raster z14 metatiles: 512 px vector tiles are loaded one zoom up).
    copyTile(join(dir, 'monaco.mbtiles'), { z: 13, x: 4264, y: 2987 }, { z: 13, x: 4265, y: 2987 });
    const r = await cli(['build', '--config', config, '--out', out, '--workers', '1'], { TILEBAKE_QUIET: '' });
    expect(r.code, r.out).toBe(0);
    const m = /render osm-bright @1x: re-rendered (\d+) of (\d+) metatiles \(data: 1 source tiles changed\)/.exec(r.out);
    expect(m, r.out).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(Number(m![1])).toBeLessThan(Number(m![2]));
  }, LONG);
});
