/**
 * A distributed build end to end through a real S3 API (Swift's s3api, test/fixtures/swift.ts): plan
 * with `--run s3://…`, four shards (each given its index by another engine's variable, with the command
 * lines the Kubernetes/Argo/AWS Batch/Cloud Run definitions run: deploy/params.ts) that compute their
 * view keys (render.dedup, on by default) from the run's tileset archives by ranged reads, publish to
 * `s3://…/out`; the published version equals a one-machine `tilebake build` byte for byte and
 * `tilebake serve --out s3://…/out` serves it. Unreachable storage exits 75, wrong credentials and a
 * missing bucket 78, and a refused publish leaves the current version as it was. Later publishes prune
 * old versions by the local rule (--keep), never the current one or the one before it, which a running
 * server may still read.
 *
 * Config: the Monaco sample, osm-bright at z12–13, 1x and @2x, PNG and JPEG, single-tile metatiles (every
 * shard renders; the Slurm test covers the rest of the contract; here the store is what is under test),
 * with the sample's Latin glyph ranges only (latinFonts): Swift handles each file of a version as an object.
 */
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir, versionPath } from '../lib/build-version.ts';
import { openWritableStore, type WritableStore } from '../lib/object-store.ts';
import { lonLatToTile } from '../lib/tile-math.ts';
import { EXIT_PERMANENT, EXIT_TRANSIENT, publishArgs, shardArgs } from '../deploy/params.ts';
import { runCli } from './fixtures/cli.ts';
import { freePort, request, startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { startSwift, SWIFT_HOOK_TIMEOUT_MS, type Swift } from './fixtures/swift.ts';
import { latinFonts, readTile, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

const N = 4;
const LONG = 900_000;
const TOKEN = 'distributed-s3-test-token';
const CITY = { z: 13, ...lonLatToTile(7.4196, 43.7335, 13) };

let swift: Swift;
let dir: string;
let configFile: string;
let ref: string;
let run: string;
let out: string;
let serve: ServeProcess | undefined;

/** The test's engine index variables and AWS settings: a command gets Swift's credentials only. */
const FOREIGN_VARS = /^(SLURM_|AWS_BATCH_|CLOUD_RUN_|BATCH_TASK_|JOB_COMPLETION_INDEX|TILEBAKE_SHARD_INDEX|AWS_)/;

/** Run the CLI with Swift's credentials and `env`; resolves with its exit code and output (never rejects). */
async function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; out: string }> {
  const r = await runCli(args, { env: { ...credentials(), ...env }, unset: FOREIGN_VARS });
  return { code: r.code, out: r.output };
}

/** Swift's credentials without the endpoint (commands get it from --s3-endpoint, as the engine definitions pass it). */
function credentials(): Record<string, string> {
  if (!swift) return {};
  const { AWS_ENDPOINT_URL: _endpoint, ...rest } = swift.env;
  return rest;
}

/** The run's and output's store, as the test reads them. */
function storeOf(location: string): WritableStore {
  return openWritableStore(location, { s3Endpoint: swift.endpoint });
}

/** Every file of a version, path → base64 bytes (manifest.json without its generatedAt). */
function normalised(path: string, bytes: Uint8Array): string {
  const b = Buffer.from(bytes);
  return (path.endsWith('manifest.json') ? Buffer.from(JSON.stringify({ ...JSON.parse(b.toString()), generatedAt: undefined })) : b).toString('base64');
}

/** The current version of a local output folder. */
async function localVersion(folder: string): Promise<Map<string, string>> {
  const v = (await currentVersionDir(folder))!;
  const files = new Map<string, string>();
  for (const e of await readdir(v.dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    files.set(path.slice(v.dir.length + 1), normalised(path, await readFile(path)));
  }
  return files;
}

/** The current version of an output on S3 (current.json → builds/<id>/). */
async function s3Version(store: WritableStore): Promise<{ id: string; files: Map<string, string> }> {
  const pointer = JSON.parse(Buffer.from((await store.readFile('current.json'))!).toString()) as { build: string; path: string };
  const files = new Map<string, string>();
  for (const o of await store.list(`${pointer.path}/`)) {
    const rel = o.path.slice(pointer.path.length + 1);
    files.set(rel, normalised(rel, (await store.readFile(o.path))!));
  }
  return { id: pointer.build, files };
}

beforeAll(async () => {
  dir = await tempDir('dist-s3');
  ref = join(dir, 'ref');
  const raw = { ...sampleConfig(ref, { minzoom: 12, maxzoom: 13, scales: [1, 2], formats: ['png', 'jpg'] }, { metatile: 1, margin: 64 }), fonts: await latinFonts(dir) };
  configFile = (await writeConfig(dir, 'config.json', raw)).file;
  const oneMachine = async () => {
    const r = await cli(['build', '--config', configFile, '--out', ref, '--workers', '1']);
    if (r.code !== 0) throw new Error(`one-machine build failed (${r.code}):\n${r.out}`);
  };
  [swift] = await Promise.all([startSwift('tilebake-dist'), oneMachine()]);
  // The test's own reads (storeOf) take the credentials from the standard chain too.
  Object.assign(process.env, credentials());
  run = `s3://${swift.bucket}/runs/r1`;
  out = `s3://${swift.bucket}/tiles`;
}, SWIFT_HOOK_TIMEOUT_MS + LONG);

afterAll(async () => {
  if (serve) {
    serve.proc.kill('SIGTERM');
    await serve.exited;
  }
  await swift?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('plan / shard / publish through S3 (Swift)', () => {
  it('publishes a version byte-identical to a one-machine build', async () => {
    const planned = await cli(['plan', '--config', configFile, '--run', run, '--shards', String(N), '--s3-endpoint', swift.endpoint]);
    expect(planned.code, planned.out).toBe(0);
    expect(Buffer.from((await storeOf(run).readFile('run.json'))!).toString()).toContain(`"n": ${N}`);
    // Each shard gets its index from another engine, as the generated definitions give it.
    const engines: Record<string, string>[] = [
      { JOB_COMPLETION_INDEX: '0' },
      { AWS_BATCH_JOB_ARRAY_INDEX: '1', AWS_BATCH_JOB_ARRAY_SIZE: String(N) },
      { TILEBAKE_SHARD_INDEX: '2' },
      { CLOUD_RUN_TASK_INDEX: '3', CLOUD_RUN_TASK_COUNT: String(N) },
    ];
    const shards = await Promise.all(
      engines.map((env, i) => cli([...shardArgs({ run, s3Endpoint: swift.endpoint }).map((a) => (a === '/scratch' ? join(dir, `scratch-${i}`) : a)), '--workers', '1'], { ...env, TILEBAKE_QUIET: '' })),
    );
    for (const s of shards) {
      expect(s.code, s.out).toBe(0);
      // Views keyed from the run's archives on S3 (render.dedup), not rendered blind.
      expect(s.out).toMatch(/@1x: \d+ distinct views rendered for \d+ metatiles \(views keyed by the tiles under them/);
      expect(s.out).not.toContain('render.dedup off');
    }
    const listed = (await storeOf(run).list('shards/')).map((o) => o.path);
    for (let i = 0; i < N; i++) expect(listed).toContain(`shards/${i}/DONE.json`);

    const published = await cli(publishArgs({ run, out, s3Endpoint: swift.endpoint }));
    expect(published.code, published.out).toBe(0);
    const remote = await s3Version(storeOf(out));
    const local = await localVersion(ref);
    expect([...remote.files.keys()].sort()).toEqual([...local.keys()].sort());
    expect([...local.keys()].filter((k) => k.endsWith('.pmtiles')).length).toBeGreaterThanOrEqual(5);
    for (const [path, bytes] of local) expect(remote.files.get(path), path).toBe(bytes);
  }, LONG);

  it('re-running a done shard renders nothing', async () => {
    const again = await cli([...shardArgs({ run, s3Endpoint: swift.endpoint }), '--index', '1'], { TILEBAKE_QUIET: '' });
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('rendered 0 metatiles');
  }, LONG);

  it('tilebake serve --out s3://…/tiles serves the published build', async () => {
    serve = await startServe(['--out', out, '--s3-endpoint', swift.endpoint, '--port', '0', '--host', '127.0.0.1', '--workers', '1'], { TILEBAKE_TOKENS: TOKEN, ...credentials() });
    const refArchive = join((await currentVersionDir(ref))!.dir, 'styles/osm-bright/2x.png.pmtiles');
    const res = await request(`${serve.url}/styles/osm-bright/${CITY.z}/${CITY.x}/${CITY.y}@2x.png`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.body.equals(Buffer.from(await readTile(refArchive, CITY.z, CITY.x, CITY.y)))).toBe(true);
  }, LONG);
});

describe('storage failures get the engines\' exit codes, and nothing half-published', () => {
  it('an unreachable endpoint: 75 (retry)', async () => {
    const port = await freePort();
    const r = await cli([...shardArgs({ run, s3Endpoint: `http://127.0.0.1:${port}` }), '--index', '0']);
    expect(r.code, r.out).toBe(EXIT_TRANSIENT);
    expect(r.out).toContain(`${run}/run.json`);
    expect(r.out).toContain('ECONNREFUSED');
    expect(r.out).not.toMatch(/\n\s+at /);
  }, LONG);

  it('wrong credentials and a missing bucket: 78 (do not retry)', async () => {
    const wrong = await cli([...shardArgs({ run, s3Endpoint: swift.endpoint }), '--index', '0'], { AWS_SECRET_ACCESS_KEY: 'wrong' });
    expect(wrong.code, wrong.out).toBe(EXIT_PERMANENT);
    expect(wrong.out).toContain(`${run}/run.json: SignatureDoesNotMatch`);
    const missing = await cli([...shardArgs({ run: 's3://tilebake-nothing/runs/r1', s3Endpoint: swift.endpoint }), '--index', '0']);
    expect(missing.code, missing.out).toBe(EXIT_PERMANENT);
    expect(missing.out).toContain('s3://tilebake-nothing/runs/r1/run.json: NoSuchBucket');
    for (const r of [wrong, missing]) expect(r.out).not.toMatch(/\n\s+at /);
  }, LONG);

  it('a publish into a missing bucket fails with 78 and the published version stays current', async () => {
    const before = Buffer.from((await storeOf(out).readFile('current.json'))!).toString();
    const bad = await cli(publishArgs({ run, out: 's3://tilebake-nothing/tiles', s3Endpoint: swift.endpoint }));
    expect(bad.code, bad.out).toBe(EXIT_PERMANENT);
    expect(bad.out).toContain('s3://tilebake-nothing/tiles/builds/');
    expect(bad.out).toContain('NoSuchBucket');
    const wrong = await cli(publishArgs({ run, out, s3Endpoint: swift.endpoint }), { AWS_SECRET_ACCESS_KEY: 'wrong' });
    expect(wrong.code, wrong.out).toBe(EXIT_PERMANENT);
    expect(Buffer.from((await storeOf(out).readFile('current.json'))!).toString()).toBe(before);
    expect((await storeOf(out).list('builds/')).every((o) => o.path.startsWith(`builds/${JSON.parse(before).build}/`))).toBe(true);
  }, LONG);
});


describe('old versions on object storage are pruned by the build\'s rule', () => {
  /** Version ids under builds/ of the output. */
  const versions = async () => [...new Set((await storeOf(out).list('builds/')).map((o) => o.path.split('/')[1]))].sort();
  const current = async () => (JSON.parse(Buffer.from((await storeOf(out).readFile('current.json'))!).toString()) as { build: string }).build;

  it('keeps the newest --keep, the current one and the one before it; leaves newer unfinished ones; serve keeps answering', async () => {
    const first = await current();
    expect(await versions()).toEqual([first]);
    const ids = [first];
    for (let i = 0; i < 2; i++) {
      const r = await cli(publishArgs({ run, out, s3Endpoint: swift.endpoint }), { TILEBAKE_QUIET: '' });
      expect(r.code, r.out).toBe(0);
      ids.push(await current());
    }
    // --keep 2 (default): the third publish removed the first version, every object of it.
    expect(await versions()).toEqual(ids.slice(1));
    expect(await storeOf(out).list(`${versionPath(ids[0])}/`)).toEqual([]);
    // An upload in progress (a newer id than the current one) is not touched; --keep 1 still keeps
    // the version that was current until this publish (a server polling current.json may be reading it).
    const writing = `${versionPath('99991231T000000Z-000000')}/manifest.json`;
    await storeOf(out).putBytes(writing, '{}');
    const last = await cli([...publishArgs({ run, out, s3Endpoint: swift.endpoint }), '--keep', '1'], { TILEBAKE_QUIET: '' });
    expect(last.code, last.out).toBe(0);
    ids.push(await current());
    expect(last.out).toContain(`removed old versions ${ids[1]}`);
    expect(await versions()).toEqual([ids[2], ids[3], '99991231T000000Z-000000']);
    await storeOf(out).delete(writing);
    // The server follows the pointer and keeps serving: the tile is the one-machine build's.
    const refArchive = join((await currentVersionDir(ref))!.dir, 'styles/osm-bright/2x.png.pmtiles');
    const res = await request(`${serve!.url}/styles/osm-bright/${CITY.z}/${CITY.x}/${CITY.y}@2x.png`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.body.equals(Buffer.from(await readTile(refArchive, CITY.z, CITY.x, CITY.y)))).toBe(true);
  }, LONG);
});
