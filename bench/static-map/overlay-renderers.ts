/**
 * The library renderers that could draw static maps' overlays (static-server/static-map/overlay.ts's SVG: the bench's
 * 50-point path and a pin, with and without a label), measured on the bench's 640×480 @2x views:
 * - librsvg inside sharp (the SVG handed to sharp's composite; what compose.ts uses),
 * - resvg (`@resvg/resvg-js`, Rust; rendered on libuv's pool by `renderAsync`),
 * - Skia (`@napi-rs/canvas`; the SVG drawn as an image, on the main thread).
 * Each composes the same base (the view's pixels, made once) with its overlay and encodes the PNG,
 * whole rounds alternated; "none" is the base encoded without an overlay. Printed: CPU ms per image
 * (process CPU, libvips' and libuv's threads included) and the worst and mean difference of each
 * renderer's images from librsvg's (premultiplied colour and alpha, in 1/255). resvg and Skia hand over premultiplied RGBA, which sharp takes as such.
 *
 * resvg and Skia are not dependencies of tilebake; to measure them install them without saving:
 *   npm install --no-save @resvg/resvg-js @napi-rs/canvas
 *   node --import tsx bench/static-map/overlay-renderers.ts [--out BUILD] [--views 60] [--rounds 5]
 * A renderer that is not installed is left out.
 */
import sharp, { type OverlayOptions } from 'sharp';
import { loadavg } from 'node:os';
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { PNG_LEVEL, planRegion, regionView, stitchRegion, type RawImage } from '../../static-server/static-map/compose.ts';
import { overlaySvg, type OverlaySvg } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { viewParts, views } from './sample.ts';

/** The font the overlay's labels name (Debian's fonts-dejavu-core, installed by `make setup`). */
const LABEL_FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf';

type Renderer = (o: OverlaySvg) => Promise<OverlayOptions>;

/** The parts of the optional packages used here (they are not dependencies, so not type-checked). */
interface Resvg {
  renderAsync(svg: Buffer, opts: { font: { loadSystemFonts: boolean; fontFiles: string[] } }): Promise<{ pixels: Buffer; width: number; height: number }>;
}
interface Skia {
  createCanvas(w: number, h: number): { getContext(kind: '2d'): { drawImage(img: unknown, x: number, y: number): void }; data(): Buffer };
  Image: new () => { src: Buffer };
}
/** An optional package, or undefined when it is not installed. */
async function optional<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch {
    console.log(`${name} is not installed: left out`);
    return undefined;
  }
}

async function renderers(): Promise<Record<string, Renderer>> {
  const out: Record<string, Renderer> = { librsvg: async (o) => ({ input: o.input, left: o.left, top: o.top }) };
  const resvg = await optional<Resvg>('@resvg/resvg-js');
  if (resvg) {
    out.resvg = async (o) => {
      const r = await resvg.renderAsync(o.input, { font: { loadSystemFonts: false, fontFiles: o.input.includes('<text') ? [LABEL_FONT] : [] } });
      return { input: r.pixels, raw: { width: r.width, height: r.height, channels: 4, premultiplied: true }, left: o.left, top: o.top };
    };
  }
  const skia = await optional<Skia>('@napi-rs/canvas');
  if (skia) {
    out.skia = async (o) => {
      const canvas = skia.createCanvas(o.width, o.height);
      const img = new skia.Image();
      img.src = o.input;
      canvas.getContext('2d').drawImage(img, 0, 0);
      return { input: canvas.data(), raw: { width: o.width, height: o.height, channels: 4, premultiplied: true }, left: o.left, top: o.top };
    };
  }
  return out;
}

const { out, views: N, rounds: ROUNDS } = benchOptions();
const bench = await openBench(out);
const entry = bench.entry;
const source = bench.source();

interface Job {
  base: RawImage;
  overlay: OverlaySvg;
}
async function jobs(label: boolean): Promise<Job[]> {
  const list: Job[] = [];
  for (const v of views(entry.bounds as BBox, N)) {
    const { view, size, query } = viewParts(v);
    if (label) query.marker = query.marker.map((m) => `${m}|label:A1`);
    const req = parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
    const cam = cameraFor(req, entry.maxzoom);
    const plan = planRegion(cam, source, cam.width, cam.height);
    const region = await stitchRegion(source, plan);
    const { data, info } = await regionView(region, plan).raw().toBuffer({ resolveWithObject: true });
    list.push({ base: { data, width: info.width, height: info.height, channels: region.channels }, overlay: overlaySvg(cam, req.paths, req.markers)! });
  }
  return list;
}

async function image(j: Job, render: Renderer | undefined): Promise<Buffer> {
  let s = sharp(j.base.data, { raw: { width: j.base.width, height: j.base.height, channels: j.base.channels } });
  if (render) s = s.composite([await render(j.overlay)]);
  return s.png({ compressionLevel: PNG_LEVEL }).toBuffer();
}

const all = await renderers();
for (const label of [false, true]) {
  const list = await jobs(label);
  const variants: [string, Renderer | undefined][] = [['none', undefined], ...Object.entries(all)];
  // Differences from librsvg's images (straight RGBA).
  const pixels = (png: Buffer) => sharp(png).ensureAlpha().raw().toBuffer();
  const diff: Record<string, { worst: number; sum: number; n: number }> = {};
  for (const j of list) {
    const want = await pixels(await image(j, all.librsvg));
    for (const [name, r] of variants.slice(2)) {
      const got = await pixels(await image(j, r));
      const d = (diff[name] ??= { worst: 0, sum: 0, n: 0 });
      // Premultiplied colour and alpha (a nearly transparent pixel's straight colour means little).
      for (let i = 0; i < got.length; i++) {
        const alpha = i % 4 === 3;
        const e = Math.abs((alpha ? got[i] : Math.round((got[i] * got[i | 3]) / 255)) - (alpha ? want[i] : Math.round((want[i] * want[i | 3]) / 255)));
        d.worst = Math.max(d.worst, e);
        d.sum += e;
        d.n++;
      }
    }
  }
  const cpu: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...variants].reverse() : variants;
    for (const [name, r] of order) {
      const c = cpuMs();
      // Two at a time, as the server's queue composes (TILEBAKE_STATIC_CONCURRENCY, default 2).
      for (let i = 0; i < list.length; i += 2) await Promise.all(list.slice(i, i + 2).map((j) => image(j, r)));
      if (round > 0) (cpu[name] ??= []).push((cpuMs() - c) / list.length);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`\n${list.length} views, pin ${label ? 'with the label "A1"' : 'without a label'}; ${ROUNDS - 1} rounds after a warm-up; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log('| overlay renderer | CPU ms per image (each round) | mean | overlay: mean − none | vs librsvg: worst, mean difference |');
  console.log('| --- | --- | ---: | ---: | --- |');
  for (const [name] of variants) {
    const d = diff[name];
    const vs = name === 'none' ? '' : d ? `${d.worst}, ${(d.sum / d.n).toFixed(3)}` : '(itself)';
    console.log(`| ${name} | ${cpu[name].map((x) => x.toFixed(1)).join(', ')} | ${mean(cpu[name]).toFixed(1)} | ${name === 'none' ? '' : (mean(cpu[name]) - mean(cpu.none)).toFixed(1)} | ${vs} |`);
  }
}
process.exit(0);
