/**
 * Benchmark (not a test): what a render browser spends the first time it draws a style × scale, against
 * the same work once it has drawn everything before (what a seeded or kept cache could save at most).
 *
 *   node --import tsx bench/chromium-start/phases.ts [--rounds 3] [--minzoom 13] [--maxzoom 14]
 *
 * One browser (workers/render-browser.ts) on a render server of the Monaco sample: its start, then for
 * osm-bright and positron at 1x and @2x the style's load (`init`) and every metatile of the zooms
 * (`views`), a cold pass and then the same again (warm). A warm pass still loads and parses the tiles
 * (each style switch reloads its sources) but finds MapLibre's code compiled and optimised and the
 * GPU process's programs and SwiftShader's pipelines built. CPU seconds per Chromium process kind
 * from /proc (10 ms ticks); medians over the rounds, one fresh browser per round.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readManifestOrEmpty, type Manifest } from '../../lib/manifest.ts';
import { enumerateMetatiles, metatileView } from '../../lib/metatiles.ts';
import { commandLine, processTree } from '../../lib/process-tree.ts';
import { LocalStore } from '../../lib/storage.ts';
import { parseConfig } from '../../pipeline/config/index.ts';
import { prepareStyle } from '../../pipeline/render/style.ts';
import { runVectorStage } from '../../pipeline/vector/stage.ts';
import { startRenderHost } from '../../workers/render-host/server.ts';
import { RENDER_PAGE_PATH, uploadUrl } from '../../lib/upload-receipt.ts';
import { BrowserRenderer, RENDER_PAGE_DIR } from '../../workers/render-browser.ts';
import { chromiumKind, cpuSeconds } from './process-kind.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SAMPLE = join(ROOT, 'data/sample');
const STYLES = ['osm-bright', 'positron'];
const SCALES = [1, 2];
const KINDS = ['browser', 'gpu', 'renderer', 'other'];

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, minzoom: { type: 'string', default: '13' }, maxzoom: { type: 'string', default: '14' } } });
const ROUNDS = Number(values.rounds);
const MINZOOM = Number(values.minzoom);
const MAXZOOM = Number(values.maxzoom);

/** CPU seconds so far of this process's Chromium processes, by kind (browser, gpu, renderer, other). */
function chromiumCpu(): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of processTree(process.pid)) {
    const cmd = commandLine(s.pid) ?? '';
    if (s.pid === process.pid || !cmd.includes('chromium')) continue;
    const k = chromiumKind(cmd);
    const key = KINDS.includes(k) ? k : 'other';
    out.set(key, (out.get(key) ?? 0) + cpuSeconds(s));
  }
  return out;
}

const out = await mkdtemp(join(tmpdir(), 'tilebake-bench-phases-'));
process.env.TILEBAKE_QUIET = '1';
try {
  const fonts = join(SAMPLE, 'fonts');
  const config = parseConfig(
    {
      out,
      tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
      styles: Object.fromEntries(STYLES.map((id) => [id, { style: join(SAMPLE, 'styles', id, 'style.json'), minzoom: MINZOOM, maxzoom: MAXZOOM }])),
      fonts,
    },
    join(out, 'config.json'),
  );
  await runVectorStage(config, out);
  await cp(fonts, join(out, 'fonts'), { recursive: true });
  const built = await readManifestOrEmpty(out);
  const tileset = built.tilesets.openmaptiles;
  const styles: Manifest['styles'] = {};
  for (const id of STYLES) {
    await prepareStyle(id, config.styles[id].style, out, { tilesets: built.tilesets, defaultTileset: 'openmaptiles', fonts, scales: SCALES });
    styles[id] = { style: `styles/${id}/style.json`, sprite: `styles/${id}/sprite`, minzoom: MINZOOM, maxzoom: MAXZOOM, bounds: tileset.bounds, center: tileset.center, archives: {} };
  }
  const server = await startRenderHost({ store: new LocalStore(out), manifest: { ...built, fonts: 'fonts', styles }, pageDir: RENDER_PAGE_DIR, cacheMb: 64 });
  const views = [...enumerateMetatiles(tileset.bounds, MINZOOM, MAXZOOM, 4)].map((m) => metatileView(m, 64));
  /** Per phase name, per kind, the CPU s of each round. */
  const phases = new Map<string, Map<string, number[]>>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const renderer = new BrowserRenderer(`${server.url}${RENDER_PAGE_PATH}`);
      let last = chromiumCpu();
      const record = (name: string) => {
        const now = chromiumCpu();
        const byKind = phases.get(name) ?? new Map<string, number[]>();
        for (const k of KINDS) (byKind.get(k) ?? byKind.set(k, []).get(k)!).push((now.get(k) ?? 0) - (last.get(k) ?? 0));
        phases.set(name, byKind);
        last = now;
      };
      try {
        await renderer.open();
        // The page is ready before the browser's own start has settled (network service, storage).
        await new Promise((r) => setTimeout(r, 300));
        record('start');
        for (const pass of ['cold', 'warm']) {
          for (const id of STYLES) {
            for (const ratio of SCALES) {
              const styleUrl = `${server.url}/styles/${id}/style.json`;
              await renderer.renderViews(styleUrl, ratio, []);
              record(`${pass} ${id}@${ratio} init`);
              const uploads = server.session.uploads;
              const ids = views.map((v) => uploads.expect(v.width * v.height * ratio * ratio * 4));
              const drawn = await renderer.renderViews(styleUrl, ratio, views.map((v, i) => ({ ...v, upload: uploadUrl(server.url, ids[i]) })));
              if (drawn.failure) throw new Error(drawn.failure);
              await renderer.flush();
              for (const id of ids) uploads.take(id);
              record(`${pass} ${id}@${ratio} views`);
            }
          }
        }
      } finally {
        await renderer.close();
      }
    }
  } finally {
    await server.close();
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const row = (name: string, byKind: Map<string, number[]>) => `${name.padEnd(26)} ${KINDS.map((k) => `${k} ${median(byKind.get(k)!).toFixed(2)}`).join('  ')}`;
  console.log(`${views.length} metatiles per style × scale (z${MINZOOM}–${MAXZOOM}); medians over ${ROUNDS} rounds, CPU s (load ${loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  for (const [name, byKind] of phases) console.log(row(name, byKind));
  for (const pass of ['cold', 'warm']) {
    const total = new Map(KINDS.map((k) => [k, [] as number[]]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const k of KINDS) total.get(k)!.push([...phases].filter(([n]) => n.startsWith(pass)).reduce((sum, [, byKind]) => sum + byKind.get(k)![r], 0));
    }
    console.log(row(`${pass} pass, total`, total));
  }
} finally {
  await rm(out, { recursive: true, force: true });
}
