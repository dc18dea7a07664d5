/** Shared helpers of the `tilebake update` tests: replication folders as a server holds them on a given night, CLI runs, references. */
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tileIdToZxy } from '../lib/pmtiles/index.ts';
import { readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { enumerateMetatiles } from '../lib/metatiles.ts';
import { boundsAtZoom, type ZoomCoverage } from '../lib/manifest.ts';
import { viewSourceTiles } from '../pipeline/render/selection.ts';
import { copyWithHeaderBBox } from '../pipeline/osm/pbf-bounds.ts';
import { sequencePath } from '../pipeline/update/replication.ts';
import { runCli as runTilebake, type CliOptions, type CliResult } from './fixtures/cli.ts';
import { runNginx, freePort, type Nginx } from './fixtures/server/helpers.ts';
import { archiveTiles, OSM_BRIGHT, SAMPLE, writeConfig } from './render-helpers.ts';

export const FIXTURES = resolve(import.meta.dirname, 'fixtures', 'osm-replication');
export const LIECHTENSTEIN = { extract: join(FIXTURES, 'liechtenstein', '2019-11-18.osm.pbf'), replication: join(FIXTURES, 'liechtenstein', 'replication'), sequence: 2434 };
export const MONACO = { extract: join(FIXTURES, 'monaco', '2021-08-01.osm.pbf'), replication: join(FIXTURES, 'monaco', 'replication'), sequence: 3047 };

/** The fixture's change file of `seq` (`.osc.gz` or `.state.txt`). */
export function fixtureFile(region: { replication: string }, seq: number, ext: 'osc.gz' | 'state.txt'): string {
  return join(region.replication, `${sequencePath(seq)}.${ext}`);
}

/**
 * Write into `dir` the replication folder as the server holds it once sequence `upTo` is out: the
 * fixture's files up to `upTo` and `state.txt` naming it. `skip` leaves sequences out (a gap).
 */
export async function replicationFolder(region: { replication: string }, dir: string, upTo: number, skip: number[] = []): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const top of await readdir(region.replication, { recursive: true, withFileTypes: true })) {
    if (!top.isFile()) continue;
    const m = /(\d{3})\/(\d{3})\/(\d{3})\.(osc\.gz|state\.txt)$/.exec(join(top.parentPath, top.name));
    if (!m) continue;
    const seq = Number(`${m[1]}${m[2]}${m[3]}`);
    if (seq > upTo || skip.includes(seq)) continue;
    const to = join(dir, sequencePath(seq) + `.${m[4]}`);
    await mkdir(join(to, '..'), { recursive: true });
    await copyFile(join(top.parentPath, top.name), to);
  }
  await copyFile(fixtureFile(region, upTo, 'state.txt'), join(dir, 'state.txt'));
  return dir;
}

/** `file://` URL of a folder, with the trailing slash. */
export function fileUrl(dir: string): string {
  return `${pathToFileURL(dir).href}/`;
}

/**
 * Debian's nginx serving `root` (replication folders) on a free loopback port; ready once `probe`
 * answers. `readable`: the folders above `root` nginx's unprivileged workers must pass (a temp folder).
 */
export async function serveReplication(root: string, probe = 'state.txt', readable: string[] = []): Promise<Nginx> {
  const port = await freePort();
  const http = (dir: string) => `
  access_log ${dir}/access.log;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { }
  }
`;
  return runNginx(http, `http://127.0.0.1:${port}/`, probe, [...readable, root]);
}

/** What the code under test writes to stderr (its log lines), kept instead of printed between `start` and `stop`; `text` since the last `clear`. */
export function captureStderr(): { start: () => void; stop: () => void; clear: () => void; text: () => string } {
  let lines: string[] = [];
  const write = process.stderr.write;
  return {
    start: () => {
      process.stderr.write = ((chunk: string | Uint8Array) => lines.push(String(chunk)) > 0) as typeof process.stderr.write;
    },
    stop: () => {
      process.stderr.write = write;
    },
    clear: () => {
      lines = [];
    },
    text: () => lines.join(''),
  };
}

/** Run `tilebake ARGS…` to its end with its progress lines (TILEBAKE_QUIET off: the update tests read them). */
export function runCli(args: string[], onStderr?: CliOptions['onStderr']): Promise<CliResult> {
  return runTilebake(args, { env: { TILEBAKE_QUIET: '' }, onStderr });
}

/**
 * The reference extract: `osmium apply-changes` of the fixture's change files `from+1..to` on the
 * extract, with the extract's header bbox kept (as `tilebake update` keeps it, so both have the same tile box).
 */
export async function referenceExtract(region: { extract: string; replication: string }, from: number, to: number, out: string): Promise<string> {
  const files: string[] = [];
  for (let s = from + 1; s <= to; s++) files.push(fixtureFile(region, s, 'osc.gz'));
  const applied = `${out}.applied`;
  await new Promise<void>((res, rej) => {
    const p = spawn('osmium', ['apply-changes', '--no-progress', '-O', '-f', 'pbf', '-o', applied, region.extract, ...files], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => (code === 0 ? res() : rej(new Error(`osmium apply-changes: ${err}`))));
  });
  await copyWithHeaderBBox(applied, out, (await readOsmHeader(region.extract)).bbox!);
  return out;
}

/** `z/x/y` of the tiles whose bytes differ between two archives (present in one only counts). */
export async function changedTiles(a: string, b: string): Promise<Set<string>> {
  const [ta, tb] = [await archiveTiles(a), await archiveTiles(b)];
  const ids = [...new Set([...ta.keys(), ...tb.keys()])].filter((k) => ta.get(k) !== tb.get(k));
  return new Set(ids.map((id) => tileIdToZxy(Number(id)).join('/')));
}

/** The metatiles of a style (its manifest entry: what it covers, zoom by zoom) whose view (with `margin`) loads one of `changed` (a 512 px vector source, z0–14). */
export function expectedRerenders(style: ZoomCoverage, minzoom: number, maxzoom: number, metatile: number, margin: number, changed: Set<string>): { total: number; dirty: number } {
  const metas = [...enumerateMetatiles((z) => boundsAtZoom(style, z), minzoom, maxzoom, metatile)];
  const grid = { minzoom: 0, maxzoom: 14, tileSize: 512 };
  const dirty = metas.filter((m) => viewSourceTiles(m, margin, grid).some((t) => changed.has(`${t.z}/${t.x}/${t.y}`)));
  return { total: metas.length, dirty: dirty.length };
}

/** A style's zoom range and the render grid of the update tests. */
export interface UpdateStyle {
  minzoom: number;
  maxzoom: number;
  metatile: number;
  margin: number;
  /** The style's box (the tileset's bounds when not given). */
  bbox?: [number, number, number, number];
}

/**
 * Write a config over OSM `source` (tileset `omt`, `replication` and `encodings` when given), with one osm-bright
 * style at 1x PNG (over `style.bbox` when given) unless `style` is undefined, and with `world` a second one (`world`) at those zooms of the world.
 */
export async function writeUpdateConfig(dir: string, name: string, o: { out: string; source: string; replication?: string; encodings?: string[]; style?: UpdateStyle; render: UpdateStyle; world?: { minzoom: number; maxzoom: number } }): Promise<string> {
  const { style, render } = o;
  const at = (z: { minzoom: number; maxzoom: number; bbox?: UpdateStyle['bbox'] }) => ({ style: OSM_BRIGHT, tileset: 'omt', ...(z.bbox && { bbox: z.bbox }), minzoom: z.minzoom, maxzoom: z.maxzoom, scales: [1], formats: ['png'] });
  const styles = { ...(style && { 'osm-bright': at(style) }), ...(o.world && { world: at(o.world) }) };
  return (await writeConfig(dir, name, {
    out: o.out,
    tilesets: { omt: { source: o.source, ...(o.replication && { replication: o.replication }), ...(o.encodings && { encodings: o.encodings }) } },
    ...(Object.keys(styles).length > 0 && { styles, fonts: join(SAMPLE, 'fonts') }),
    render: { metatile: render.metatile, margin: render.margin, timeoutMs: 120_000 },
  })).file;
}
