/**
 * The `render` overzoom rows of bench/static-map: z16 @2x tiles above the baked zooms rendered on demand
 * by `serve` (static-server/overzoom/render.ts). Cold: one tile of each of a seeded random sample of
 * distinct metatiles (every request is a render), a fixed number in flight, after the browsers were
 * started by a warm-up at the zoom below; then the same URLs again under wrk (cached).
 */
import { request, Agent } from 'node:http';
import { enumerateMetatiles } from '../../lib/metatiles.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { chromiumBrowsersUnder } from '../../lib/process-tree.ts';
import { treeCpuMs } from '../../test/fixtures/measure.ts';
import { shuffle, type WrkFigures } from '../wrk.ts';

/** What the cold and cached runs measured. */
export interface RenderFigures {
  /** Warm-up: the first renders of every server process, its browser's start included (ms, slowest). */
  warmupMs: number;
  /** Browsers running after the warm-up (one per process when it reached them all). */
  browsers: number;
  /** Cold requests sent (one per sampled metatile), of the metatiles at that zoom. */
  requests: number;
  metatiles: number;
  /** Metatiles rendered during the cold run (server metric) and the tiles they hold. */
  renders: number;
  tiles: number;
  /** From the first cold request until no render waits or runs. */
  seconds: number;
  p50: number;
  p99: number;
  status503: number;
  status504: number;
  /** Other non-200 answers. */
  otherErrors: number;
  /** Server CPU (all its processes and their browsers) per render, ms. */
  cpuPerRenderMs: number;
  /** The same URLs again under wrk, and renders it caused (0 when all were cached). */
  cached: WrkFigures;
  cachedRenders: number;
}

export interface RenderBenchOptions {
  base: string;
  metricsPort: number;
  /** PID of the `serve` process (its workers and browsers are its descendants). */
  pid: number;
  /** Server processes (each starts its own browser). */
  processes: number;
  token: string;
  style: string;
  bounds: BBox;
  /** Tiles per metatile side of the build (its manifest's render settings). */
  metatile: number;
  zoom: number;
  /** Metatiles to sample (at most those at `zoom`) and requests in flight. */
  sample: number;
  concurrency: number;
  /** wrk over a list of tile paths (written to a file by the caller) under `prefix`. */
  wrk: (lines: string[], prefix: string) => WrkFigures;
}

/** GET `path` with the token; status and milliseconds. `agent: false` opens a new connection (spread over the server's processes). */
function get(o: RenderBenchOptions, path: string, agent: Agent | false): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((res, rej) => {
    const req = request(`${o.base}${path}`, { agent, headers: { Authorization: `Bearer ${o.token}` } }, (r) => {
      r.on('data', () => {});
      r.on('end', () => res({ status: r.statusCode ?? 0, ms: performance.now() - t0 }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end();
  });
}

/** The metrics page, on a new connection each time (a pooled keep-alive one can be closed by the server as it is reused). */
function metricsText(o: RenderBenchOptions): Promise<string> {
  return new Promise((res, rej) => {
    const req = request(`http://127.0.0.1:${o.metricsPort}/metrics`, { agent: false }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => res(text));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end();
  });
}

/** Value of a metric line `name` (with its labels) summed over the server's processes, from /metrics. */
async function metric(o: RenderBenchOptions, name: string): Promise<number> {
  const text = await metricsText(o);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

const RENDERED = 'tilebake_render_tiles_total{outcome="rendered"}';

/** Wait until no render waits or runs (a request past its deadline leaves its render going). */
async function drained(o: RenderBenchOptions): Promise<void> {
  while ((await metric(o, 'tilebake_render_queue')) > 0) await new Promise((r) => setTimeout(r, 100));
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN;
}

/** A seeded random tile of each metatile, as `z/x/y@2x.png`. */
function tileOfEach(metas: { tiles: { z: number; x: number; y: number }[] }[]): string[] {
  return metas.map((m, i) => {
    const t = shuffle([...m.tiles], 100 + i)[0];
    return `${t.z}/${t.x}/${t.y}@2x.png`;
  });
}

export async function measureRender(o: RenderBenchOptions): Promise<RenderFigures> {
  const prefix = `/styles/${o.style}/`;
  // Warm-up: one metatile per process at the zoom below, each on a new connection, so every
  // process has started its browser and loaded the style before the cold run.
  const warm = tileOfEach([...enumerateMetatiles(o.bounds, o.zoom - 1, o.zoom - 1, o.metatile)].slice(0, o.processes));
  const warmed = await Promise.all(warm.map((t) => get(o, `${prefix}${t}`, false)));
  const bad = warmed.find((r) => r.status !== 200);
  if (bad) throw new Error(`warm-up render: HTTP ${bad.status} (is the style in render mode, and Chromium installed?)`);
  await drained(o);
  const browsers = chromiumBrowsersUnder(o.pid).length;

  const all = [...enumerateMetatiles(o.bounds, o.zoom, o.zoom, o.metatile)];
  const sample = shuffle(all, 29).slice(0, o.sample);
  const urls = tileOfEach(sample);
  const agent = new Agent({ keepAlive: true, maxSockets: o.concurrency });
  const [cpu0, renders0] = [treeCpuMs(o.pid), await metric(o, RENDERED)];
  const t0 = performance.now();
  const answers: { status: number; ms: number; i: number }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (next < urls.length) {
        const i = next++;
        answers.push({ ...(await get(o, `${prefix}${urls[i]}`, agent)), i });
      }
    }),
  );
  await drained(o);
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  const renders = (await metric(o, RENDERED)) - renders0;
  const cpu = treeCpuMs(o.pid) - cpu0;
  // A refused request (503) caused no render; a late one (504) did, and it finished before drained().
  const tiles = answers.filter((a) => a.status !== 503).reduce((n, a) => n + sample[a.i].tiles.length, 0);
  const ms = answers.filter((a) => a.status === 200).map((a) => a.ms).sort((a, b) => a - b);
  const count = (s: number) => answers.filter((a) => a.status === s).length;

  const cachedBefore = await metric(o, RENDERED);
  const cached = o.wrk(urls, prefix);
  const cachedRenders = (await metric(o, RENDERED)) - cachedBefore;
  return {
    warmupMs: Math.max(...warmed.map((r) => r.ms)),
    browsers,
    requests: urls.length,
    metatiles: all.length,
    renders,
    tiles,
    seconds,
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    status503: count(503),
    status504: count(504),
    otherErrors: answers.length - count(200) - count(503) - count(504),
    cpuPerRenderMs: renders ? cpu / renders : NaN,
    cached,
    cachedRenders,
  };
}
