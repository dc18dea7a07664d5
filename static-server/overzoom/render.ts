/**
 * Raster tiles above a style's baked maxzoom in `render` mode: rendered on demand by the build's own
 * render page and renderer (workers/metatile-renderer.ts, one Chromium per server process, started on
 * the first render and stopped with the version's app), one metatile of the build's grid at a time
 * (lib/metatiles.ts) and encoded with the build's settings (lib/raster-encode.ts): a tile is the
 * bytes `build` bakes at that zoom. The page reads the version's files from a render host on
 * 127.0.0.1 (workers/render-host/server.ts).
 *
 * Every tile of a render goes to the on-disk cache (render-cache.ts, shared by the processes of
 * `--workers N`) and to the memory tile cache. Requests for one metatile share one render; renders
 * waiting or running are bounded (`--render-queue` beyond the browsers: then `503` with
 * `Retry-After`); a request waits at most `--render-timeout-ms` (then `504`; the render goes on and
 * is cached). A render that fails (browser crash or hang: restarted and retried once) answers `502`.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256 } from '../../lib/hash.ts';
import { Coalescer, Memo } from '../../lib/shared-work.ts';
import { availableCpus } from '../../lib/cpus.ts';
import { UserError } from '../../lib/errors.ts';
import { boundsAtZoom, type StyleArchive, type StyleEntry, type RenderSettings } from '../../lib/manifest.ts';
import { metatileContaining, metatileKey, type Metatile } from '../../lib/metatiles.ts';
import { hasOpaqueBackground, sliceMetatile, type RasterFormat, type RawImage } from '../../lib/raster-encode.ts';
import { assertChromium } from '../../workers/chromium.ts';
import { MetatileRenderer } from '../../workers/metatile-renderer.ts';
import type { RenderHost } from '../../workers/render-host/server.ts';
import type { Archives } from '../archives.ts';
import { BoundedQueue } from '../bounded-queue.ts';
import { HttpError, type ServerContext } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { serverMetrics } from '../metrics.ts';
import { tileBody, type TileBody } from '../tile-response.ts';
import { RENDER_DEFAULTS } from './policy.ts';
import { RenderCache } from './render-cache.ts';

/** Retries of a failed render (on a fresh browser) before the request gets a 502. */
const RENDER_RETRIES = 1;
/** Retry-After of a refused or timed-out request, seconds. */
const RETRY_AFTER_S = 2;
/** Cache key prefix of rendered tiles in the server's tile cache. */
const KEY_PREFIX = 'rendered:';

/** Settings of the on-demand renderer of one server process (from ServeOptions). */
export interface OnDemandOptions {
  cacheDir: string;
  cacheBytes: number;
  /** Processes sharing `cacheDir`. */
  processes: number;
  queue: number;
  timeoutMs: number;
  workers: number;
}

/** `value` of option `flag` when it is a number ≥ `min` (integer unless `fraction`), else a UserError naming the flag. */
function checked(flag: string, value: number, min: number, fraction = false): number {
  if (!Number.isFinite(value) || value < min || (!fraction && !Number.isInteger(value))) {
    throw new UserError(`--${flag}: expected ${fraction ? 'a number' : 'an integer'} >= ${min}, got ${value}`);
  }
  return value;
}

/** The on-demand options of `tilebake serve`'s options; a UserError naming a bad flag. */
export function onDemandOptions(ctx: ServerContext): OnDemandOptions {
  const o = ctx.options;
  checked('render-cache-mb', o.renderCacheMb ?? RENDER_DEFAULTS.cacheMb, 0, true);
  checked('render-queue', o.renderQueue ?? RENDER_DEFAULTS.queue, 0);
  checked('render-timeout-ms', o.renderTimeoutMs ?? RENDER_DEFAULTS.timeoutMs, 1);
  checked('render-workers', o.renderWorkers ?? RENDER_DEFAULTS.workers, 1);
  return {
    cacheDir: o.renderCache ?? join(tmpdir(), 'tilebake-render-cache'),
    cacheBytes: (o.renderCacheMb ?? RENDER_DEFAULTS.cacheMb) * 1024 * 1024,
    processes: Math.max(1, o.workers ?? availableCpus()),
    queue: o.renderQueue ?? RENDER_DEFAULTS.queue,
    timeoutMs: o.renderTimeoutMs ?? RENDER_DEFAULTS.timeoutMs,
    workers: o.renderWorkers ?? RENDER_DEFAULTS.workers,
  };
}

/** The browsers and their render host, once started. */
interface Started {
  server: RenderHost;
  renderer: MetatileRenderer;
  margin: number;
}

/** Tiles of one render by cache path. */
type RenderedTiles = Map<string, Uint8Array>;

/** The settings a style in render mode was baked with; a 500 when the manifest lacks them. */
function settingsOf(id: string, entry: StyleEntry): RenderSettings {
  if (!entry.render) throw new HttpError(HttpStatus.Internal, `style "${id}": the manifest asks for overzoom "render" without the build's render settings (build it again)`);
  return entry.render;
}

/** Wait for `p` at most `ms`; then throw `onTimeout()`. */
async function within<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Renders tiles above the baked zooms for one build version (one per tiles app). */
export class OnDemandRenderer {
  private readonly cache: RenderCache;
  /** Renders waiting or running, by metatile job key: the requests for one metatile share it. */
  private readonly jobs = new Coalescer<string, RenderedTiles>();
  /** The browsers' slots and the renders waiting for one. */
  private readonly queue: BoundedQueue;
  private started?: Promise<Started>;
  private closed = false;
  /** Whether each style paints an opaque background (read once). */
  private readonly styles = new Memo<string, boolean>();
  /** Cache folder of this build version: a rebuild never serves an older version's renders. */
  private readonly version: string;
  private readonly unwatch: () => void;

  constructor(
    private readonly ctx: ServerContext,
    private readonly archives: Archives,
    private readonly opts: OnDemandOptions,
    private readonly startHost: () => Promise<RenderHost>,
  ) {
    this.cache = new RenderCache(opts.cacheDir, opts.cacheBytes, opts.processes);
    this.queue = new BoundedQueue({ concurrency: opts.workers, queue: opts.queue, what: 'tile renders', retryAfterS: RETRY_AFTER_S });
    this.version = sha256(`${ctx.manifest.generatedAt}\n${JSON.stringify(ctx.manifest.styles)}`).slice(0, 16);
    this.unwatch = serverMetrics().watchRenderQueue(() => this.jobs.size);
  }

  /** Renders waiting or running in this process (bounded by the browsers plus `queue`). */
  get queued(): number {
    return this.jobs.size;
  }

  /** Tile z/x/y (z above the baked maxzoom) of `archive`, or null outside the style's bounds. Throws 503, 504 or 502 HttpErrors. */
  async tile(id: string, entry: StyleEntry, archive: StyleArchive, z: number, x: number, y: number): Promise<TileBody | null> {
    const settings = settingsOf(id, entry);
    const meta = metatileContaining((zz) => boundsAtZoom(entry, zz), z, x, y, settings.metatile);
    if (!meta) return null;
    const rel = this.tilePath(id, archive.scale, archive.format, z, x, y);
    const key = `${KEY_PREFIX}${rel}`;
    const hit = this.archives.cache.get(key);
    if (hit) {
      serverMetrics().rendered('memory');
      return hit;
    }
    const disk = await this.cache.get(rel);
    if (disk) {
      serverMetrics().rendered('disk');
      const body = tileBody(disk);
      this.archives.cache.set(key, body);
      return body;
    }
    const tiles = await within(this.render(id, entry, settings, meta, archive.scale), this.opts.timeoutMs, () => {
      serverMetrics().rendered('deadline');
      return new HttpError(HttpStatus.GatewayTimeout, `rendering tile ${z}/${x}/${y} of style "${id}" took longer than ${this.opts.timeoutMs} ms; it is still being rendered, retry`, {}, { 'retry-after': String(RETRY_AFTER_S) });
    });
    const bytes = tiles.get(rel);
    if (!bytes) throw new HttpError(HttpStatus.Internal, `the render of metatile ${metatileKey(meta)} of style "${id}" has no tile ${z}/${x}/${y}.${archive.format}`);
    return tileBody(bytes);
  }

  /** The render of metatile `meta` at `scale` (shared by its requests); refused with 503 when the queue is full. */
  private render(id: string, entry: StyleEntry, settings: RenderSettings, meta: Metatile, scale: number): Promise<RenderedTiles> {
    const job = `${id}/${scale}/${metatileKey(meta)}`;
    const pending = this.jobs.get(job);
    if (pending) return pending;
    if (this.closed) throw new HttpError(HttpStatus.Unavailable, 'server is shutting down', {}, { 'retry-after': String(RETRY_AFTER_S) });
    let p: Promise<RenderedTiles>;
    try {
      p = this.jobs.run(job, () => this.queue.run(() => this.renderNow(id, entry, settings, meta, scale)));
    } catch (e) {
      // Refused by the queue (it throws before queueing anything).
      serverMetrics().rendered('refused');
      throw e;
    }
    p.then(
      () => serverMetrics().rendered('rendered'),
      () => serverMetrics().rendered('failed'),
    );
    return p;
  }

  private async renderNow(id: string, entry: StyleEntry, settings: RenderSettings, meta: Metatile, scale: number): Promise<RenderedTiles> {
    if (this.closed) throw new HttpError(HttpStatus.Unavailable, 'server is shutting down', {}, { 'retry-after': String(RETRY_AFTER_S) });
    const { server, renderer, margin } = await this.start(id, settings, scale);
    if (margin !== settings.margin) throw new HttpError(HttpStatus.Internal, `style "${id}" was baked with a margin of ${settings.margin} px, another style of this build with ${margin} px: on-demand renders need one`);
    const styleUrl = `${server.url}/styles/${encodeURIComponent(id)}/style.json`;
    let image: RawImage | undefined;
    try {
      const { encoded } = await renderer.renderBatch(styleUrl, `render ${id}`, [meta], scale, async (_m, img, delivered) => {
        if (await delivered) image = img;
      });
      await encoded;
    } catch (e) {
      throw new HttpError(HttpStatus.BadGateway, `rendering metatile ${metatileKey(meta)} of style "${id}" failed: ${(e as Error).message.split('\n')[0]}`);
    }
    if (!image) throw new HttpError(HttpStatus.BadGateway, `rendering metatile ${metatileKey(meta)} of style "${id}" gave no image`);
    const formats = Object.values(entry.archives).filter((a) => a.scale === scale).map((a) => a.format as RasterFormat);
    const opaqueBackground = await this.opaque(id, entry);
    const sliced = await sliceMetatile(image, meta, { pixelRatio: scale, formats, png: settings.png, jpeg: settings.jpeg, webp: settings.webp, opaqueBackground }).catch((e: unknown) => {
      throw new HttpError(HttpStatus.BadGateway, `rendering metatile ${metatileKey(meta)} of style "${id}" failed: ${(e as Error).message}`);
    });
    const tiles: RenderedTiles = new Map();
    for (const f of formats) for (const t of sliced[f]) tiles.set(this.tilePath(id, scale, f, t.z, t.x, t.y), t.data);
    for (const [rel, data] of tiles) this.archives.cache.set(`${KEY_PREFIX}${rel}`, tileBody(data));
    await this.cache.putAll([...tiles].map(([rel, data]) => ({ rel, data }))).catch((e: unknown) => this.ctx.log.warn({ err: e }, 'render cache: could not write'));
    return tiles;
  }

  /** Start the render host and the browsers (once; again after a failed start). */
  private start(id: string, settings: RenderSettings, scale: number): Promise<Started> {
    this.started ??= (async () => {
      if (this.closed) throw new Error('server is shutting down');
      await assertChromium();
      const server = await this.startHost();
      try {
        const first = { styleUrl: `${server.url}/styles/${encodeURIComponent(id)}/style.json`, pixelRatio: scale };
        const renderer = await MetatileRenderer.start(server, first, {
          workers: this.opts.workers,
          margin: settings.margin,
          timeoutMs: this.opts.timeoutMs,
          retries: RENDER_RETRIES,
          log: (line) => this.ctx.log.warn(line),
        });
        return { server, renderer, margin: settings.margin };
      } catch (e) {
        await server.close();
        throw e;
      }
    })();
    this.started.catch(() => (this.started = undefined));
    return this.started.catch((e: unknown) => {
      throw new HttpError(HttpStatus.BadGateway, `the renderer could not start: ${(e as Error).message.split('\n')[0]}`);
    });
  }

  /** True when the style paints an opaque background (a transparent pixel then means a broken render). */
  private opaque(id: string, entry: StyleEntry): Promise<boolean> {
    return this.styles.get(id, () =>
      this.ctx.store.readFile(entry.style).then((bytes) => !!bytes && hasOpaqueBackground(JSON.parse(Buffer.from(bytes).toString('utf8')) as { layers: Record<string, unknown>[] })),
    );
  }

  /** Cache path of a tile: `<version>/<style>/<scale>x.<format>/<z>/<x>/<y>`. */
  private tilePath(id: string, scale: number, format: string, z: number, x: number, y: number): string {
    return `${this.version}/${encodeURIComponent(id)}/${scale}x.${format}/${z}/${x}/${y}`;
  }

  /** Stop the browsers and the render host (renders in flight fail). */
  async close(): Promise<void> {
    this.closed = true;
    this.unwatch();
    const started = await this.started?.catch(() => undefined);
    this.started = undefined;
    if (!started) return;
    await started.renderer.close();
    await started.server.close();
  }
}
