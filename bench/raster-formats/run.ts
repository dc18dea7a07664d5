/**
 * Raster formats benchmark (not a test): bytes per tile and encoding CPU per tile of PNG, JPEG and WebP
 * (lossy and lossless) over Liechtenstein, z0–14, 256 px and @2x, for the sample's osm-bright, positron
 * and dark-matter styles, with the build's default encoder settings.
 *
 * The styles are rendered once as PNG (lossless: the rendered pixels); every tile is decoded and then
 * encoded again in each format by the build's own encoder (lib/raster-encode.ts `sliceMetatile`, a
 * one-tile metatile), one tile at a time. CPU is this process's (sharp's threads included) over a whole
 * pass of one format; the formats run in turn in each round, the order rotated from round to round (A B C
 * D, B C D A, …), and the median round per format is reported, with ratios to PNG from the same rounds.
 * Usage: node --import tsx bench/raster-formats/run.ts [--rounds N] [--out DIR]
 * Writes bench/raster-formats/RESULTS.md.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { TILE_SIZE, type Metatile } from '../../lib/metatiles.ts';
import { openArchiveFile, tileIdToZxy } from '../../lib/pmtiles/index.ts';
import { sliceMetatile, type RasterFormat, type SliceOptions } from '../../lib/raster-encode.ts';
import { parseConfig } from '../../pipeline/config/index.ts';
import { runRenderStage } from '../../pipeline/render/stage.ts';
import { runVectorStage } from '../../pipeline/vector/stage.ts';
import { writeResults } from '../results.ts';

process.env.TILEBAKE_QUIET ??= '1';
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string' }, out: { type: 'string' } } });
const ROUNDS = Math.max(1, Number(values.rounds ?? 3));
const OUT = resolve(values.out ?? join(ROOT, 'build', 'bench-raster-formats'));
const STYLES = ['osm-bright', 'positron', 'dark-matter'];
const MAXZOOM = 14;
const MS_PER_S = 1000;
const US_PER_MS = 1000;

const raw = {
  out: OUT,
  tilesets: { liechtenstein: join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles') },
  styles: Object.fromEntries(STYLES.map((id) => [id, { style: join(ROOT, `data/sample/styles/${id}/style.json`), tileset: 'liechtenstein', minzoom: 0, maxzoom: MAXZOOM, scales: [1, 2], formats: ['png'] }])),
  fonts: join(ROOT, 'data/sample/fonts'),
};
const config = parseConfig(raw, join(OUT, 'bench.json'));

/** A variant measured: a format with the build's default settings, or WebP lossless. */
interface Variant {
  name: string;
  format: RasterFormat;
  opts: SliceOptions;
}
const defaults: SliceOptions = { pixelRatio: 1, formats: [], png: config.render.png, jpeg: config.render.jpeg, webp: config.render.webp, opaqueBackground: false };
const VARIANTS: Variant[] = [
  { name: `PNG (level ${defaults.png.compressionLevel})`, format: 'png', opts: defaults },
  { name: `JPEG (quality ${defaults.jpeg.quality})`, format: 'jpg', opts: defaults },
  { name: `WebP (quality ${defaults.webp.quality})`, format: 'webp', opts: defaults },
  { name: 'WebP lossless', format: 'webp', opts: { ...defaults, webp: { ...defaults.webp, lossless: true } } },
];

/** One rendered tile: its pixels (RGB) as the render stage had them. */
interface Tile {
  scale: 1 | 2;
  z: number;
  x: number;
  y: number;
  rgb: Buffer;
}

/** Every tile of the PNG archives, decoded (the PNG is lossless: these are the rendered pixels). */
async function renderedTiles(): Promise<Tile[]> {
  const m = await readManifestOrEmpty(OUT);
  const out: Tile[] = [];
  for (const id of STYLES) {
    for (const scale of [1, 2] as const) {
      const a = m.styles[id]?.archives[`${scale}x.png`];
      if (!a) throw new Error(`${id}: no ${scale}x.png archive in ${OUT}`);
      const r = await openArchiveFile(join(OUT, a.archive));
      try {
        for await (const e of r.entries()) {
          for (let k = 0; k < e.runLength; k++) {
            const [z, x, y] = tileIdToZxy(e.tileId + k);
            const png = (await r.getTile(z, x, y))!;
            const rgb = await sharp(png).removeAlpha().raw().toBuffer();
            out.push({ scale, z, x, y, rgb });
          }
        }
      } finally {
        await r.close();
      }
    }
  }
  return out;
}

/** One tile encoded by the build's encoder in variant `v` (the tile as a one-tile metatile). */
async function encodeTile(tile: Tile, v: Variant): Promise<Uint8Array> {
  const size = TILE_SIZE * tile.scale;
  const m: Metatile = { z: tile.z, x0: tile.x, y0: tile.y, size: 1, tiles: [{ z: tile.z, x: tile.x, y: tile.y }], area: { x: tile.x, y: tile.y, w: 1, h: 1 } };
  const encoded = await sliceMetatile({ data: tile.rgb, width: size, height: size, channels: 3 }, m, { ...v.opts, pixelRatio: tile.scale, formats: [v.format] });
  return encoded[v.format][0].data;
}

/** Encode every tile of `scale` in variant `v`; CPU and wall time of the pass, bytes of each tile. */
async function pass(tiles: Tile[], scale: 1 | 2, v: Variant): Promise<{ cpuMs: number; wallMs: number; bytes: number[] }> {
  const bytes: number[] = [];
  const cpu = process.cpuUsage();
  const t = performance.now();
  for (const tile of tiles) {
    if (tile.scale === scale) bytes.push((await encodeTile(tile, v)).length);
  }
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / US_PER_MS, wallMs: performance.now() - t, bytes };
}

/** Mean absolute difference per channel of a variant's tiles against the rendered pixels (one pass, not timed). */
async function meanDiff(tiles: Tile[], scale: 1 | 2, v: Variant): Promise<number> {
  let sum = 0;
  let n = 0;
  for (const tile of tiles) {
    if (tile.scale !== scale) continue;
    const back = await sharp(await encodeTile(tile, v)).removeAlpha().raw().toBuffer();
    for (let i = 0; i < back.length; i++) sum += Math.abs(back[i] - tile.rgb[i]);
    n += back.length;
  }
  return sum / n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

await mkdir(OUT, { recursive: true });
const loadBefore = loadavg();
await runVectorStage(config, OUT);
// Renders only what is not in OUT yet (an incremental build): a second run measures the same pixels.
await runRenderStage(config, OUT, {});
const tiles = await renderedTiles();
console.log(`${tiles.length} tiles decoded (${STYLES.join(', ')}; 256 px and @2x)`);

interface Row {
  variant: Variant;
  scale: 1 | 2;
  tiles: number;
  bytes: number;
  cpuMs: number[];
  wallMs: number[];
  diff: number;
}
const rows: Row[] = [];
for (const scale of [1, 2] as const) {
  const byVariant = VARIANTS.map((variant) => ({ variant, scale, tiles: 0, bytes: 0, cpuMs: [] as number[], wallMs: [] as number[], diff: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < VARIANTS.length; k++) {
      const row = byVariant[(k + round) % VARIANTS.length];
      const r = await pass(tiles, scale, row.variant);
      row.tiles = r.bytes.length;
      row.bytes = r.bytes.reduce((a, b) => a + b, 0);
      row.cpuMs.push(r.cpuMs);
      row.wallMs.push(r.wallMs);
      console.log(`@${scale}x round ${round + 1} ${row.variant.name}: ${(r.cpuMs / row.tiles).toFixed(2)} CPU ms/tile, ${(row.bytes / row.tiles / 1024).toFixed(1)} KiB/tile`);
    }
  }
  for (const row of byVariant) row.diff = await meanDiff(tiles, scale, row.variant);
  rows.push(...byVariant);
}
const loadAfter = loadavg();

const png = (r: Row) => rows.find((p) => p.scale === r.scale && p.variant.format === 'png')!;
/** The CPU of a variant over PNG's in the same rounds (median of per-round ratios). */
const cpuRatio = (r: Row) => median(r.cpuMs.map((c, i) => c / png(r).cpuMs[i]));
const table = rows
  .map((r) => {
    const perTile = median(r.cpuMs) / r.tiles;
    return `| ${r.variant.name} | ${r.scale === 1 ? '256 px' : '@2x (512 px)'} | ${r.tiles} | **${(r.bytes / r.tiles / 1024).toFixed(1)}** | ${(r.bytes / png(r).bytes).toFixed(2)}× | **${perTile.toFixed(2)}** | ${cpuRatio(r).toFixed(2)}× | ${(median(r.wallMs) / r.tiles).toFixed(2)} | ${r.diff.toFixed(2)} |`;
  })
  .join('\n');
const md = `# Raster formats benchmark

\`node --import tsx bench/raster-formats/run.ts${ROUNDS === 3 ? '' : ` --rounds ${ROUNDS}`}\` — the sample's ${STYLES.join(', ')} styles over
Liechtenstein (\`data/liechtenstein/liechtenstein_omt.mbtiles\`), z0–${MAXZOOM}, every tile of the tileset's bounds, rendered
once as PNG; each tile's pixels encoded again by the build's encoder (\`sliceMetatile\`, lib/raster-encode.ts: sharp ${sharp.versions.sharp},
libvips ${sharp.versions.vips}, libwebp ${sharp.versions.webp ?? '?'}) with the default \`render\` settings, one tile at a time.
"CPU ms/tile" is this process's CPU (user + system, sharp's threads included) over a pass of every tile, per tile: the median
of ${ROUNDS} round(s); "vs PNG" is the median of the per-round ratios (the formats run in turn within a round, the order
rotated each round). "mean |Δ|" is the mean absolute difference per channel (0–255) of the decoded tile from the rendered pixels.

Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GB RAM; load average before: ${loadBefore}, after: ${loadAfter}.
Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (${(performance.now() / MS_PER_S / 60).toFixed(0)} min).

| format | tile size | tiles | KiB/tile | bytes vs PNG | CPU ms/tile | CPU vs PNG | wall ms/tile | mean \\|Δ\\| |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${table}
`;
writeResults(join(import.meta.dirname, 'RESULTS.md'), md);
console.log(md);
