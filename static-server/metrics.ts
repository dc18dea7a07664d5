/**
 * The server's Prometheus metrics (prom-client): one registry per process, filled by the app's
 * onResponse hook (requests, latency, bytes by route kind), the /height route (points), the caches
 * (read at scrape time) and the store's read listener (reads, bytes, errors, timeouts). With cluster
 * workers the primary sums every worker's registry (static-server/metrics-cluster.ts).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration, type LabelValues } from 'prom-client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Manifest } from '../lib/manifest.ts';
import type { ReadOutcome } from '../lib/store-read.ts';

/** What a request asked for, the `kind` label of the request metrics. */
export type RouteKind = 'vector' | 'terrain' | 'raster' | 'tilejson' | 'style' | 'sprite' | 'glyph' | 'height' | 'static-map' | 'wmts' | 'pack' | 'search' | 'preview' | 'metrics' | 'health' | 'other';

/** Route kinds by fastify route URL (the data tile route depends on the tileset: see routeKind). */
const KIND_BY_ROUTE: Readonly<Record<string, RouteKind>> = Object.freeze({
  '/styles/:style/:z/:x/:file': 'raster',
  '/data/:file': 'tilejson',
  '/fonts/:fontstack/:file': 'glyph',
  '/height': 'height',
  '/styles/:style/static/:view/:size': 'static-map',
  '/styles/:style/static/:size': 'static-map',
  '/styles/:style/wmts.xml': 'wmts',
  '/styles/wmts.xml': 'wmts',
  '/data/:tileset/wmts.xml': 'wmts',
  '/packs/:file': 'pack',
  '/packs/styles/:file': 'pack',
  '/search': 'search',
  '/reverse': 'search',
  '/': 'preview',
  '/preview/:file': 'preview',
  '/maplibre/:file': 'preview',
  '/catalog.json': 'preview',
  '/metrics': 'metrics',
  '/health': 'health',
});
/** The data tile route: vector, terrain or raster tiles by the tileset's kind. */
const DATA_TILE_ROUTE = '/data/:tileset/:z/:x/:file';
/** `/styles/{style}/style.json`, `rendered.json` (raster TileJSON) or a sprite file. */
const STYLE_FILE_ROUTE = '/styles/:style/:file';

/** Latency buckets in seconds: cached tiles answer in well under a millisecond, store reads take longer. */
const LATENCY_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Metric name prefix. */
const PREFIX = 'tilebake_';

/** Hit, miss and size figures of one cache (lib/lru.ts ByteLru has them). */
export interface CacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly bytes: number;
}

/** A watched cache and the counts already added to the counters. */
interface WatchedCache {
  name: string;
  ref: WeakRef<CacheStats>;
  hits: number;
  misses: number;
}

/**
 * The build id and version a server answers for, the labels of `tilebake_build_info`: the id of the
 * build version served (DIR/builds/<id>/, lib/build-version.ts), or for a legacy folder without
 * versions the manifest's generation time; the version is the manifest's format version.
 */
export function servedBuild(manifest: Pick<Manifest, 'generatedAt' | 'version'>, buildId?: string): { build_id: string; version: string } {
  return { build_id: buildId ?? manifest.generatedAt ?? 'unknown', version: String(manifest.version) };
}

/** A counter counted once per request: `add` sums in a Map, the counter takes the sums when it is read. */
export interface HotCounter<L extends string> {
  /** Add `n` to the series `id` names (the same id always with the same `labels`). */
  add(id: string, labels: () => LabelValues<L>, n?: number): void;
}

/**
 * A prom-client Counter for the request path: prom-client hashes the labels on every inc; this sums
 * per series id (a string the caller builds) and hands the sums to the counter in its collect, so a
 * scrape sees every request answered before it.
 */
export function hotCounter<L extends string>(config: Omit<CounterConfiguration<L>, 'collect'>): HotCounter<L> {
  const pending = new Map<string, { labels: LabelValues<L>; n: number }>();
  new Counter<L>({
    ...config,
    collect() {
      for (const p of pending.values()) this.inc(p.labels, p.n);
      pending.clear();
    },
  });
  return {
    add(id, labels, n = 1) {
      const p = pending.get(id);
      if (p) p.n += n;
      else pending.set(id, { labels: labels(), n });
    },
  };
}

/** The registry and metrics of this process. */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly caches = new Set<WatchedCache>();
  private readonly requests = hotCounter({
    name: `${PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by route kind and status',
    labelNames: ['kind', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from receiving a request to the end of its answer, by route kind',
    labelNames: ['kind'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  private readonly bytesSent = hotCounter({
    name: `${PREFIX}http_response_bytes_total`,
    help: 'Body bytes sent (Content-Length of answers), by route kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly heightPoints = new Counter({
    name: `${PREFIX}height_points_total`,
    help: 'Points answered by /height (after resampling)',
    registers: [this.registry],
  });
  private readonly storeReads = new Counter({
    name: `${PREFIX}store_reads_total`,
    help: 'Reads from the build store (local folder or HTTP), retries included in one read, by outcome',
    labelNames: ['store', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly storeBytes = new Counter({
    name: `${PREFIX}store_read_bytes_total`,
    help: 'Bytes read from the build store',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });
  private readonly storeErrors = new Counter({
    name: `${PREFIX}store_errors_total`,
    help: 'Failed store reads by kind (timeout, bad-answer, corrupt)',
    labelNames: ['store', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly storeTimeouts = new Counter({
    name: `${PREFIX}store_timeouts_total`,
    help: 'Store reads that did not answer within --store-timeout-ms',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });
  private readonly renders = new Counter({
    name: `${PREFIX}render_tiles_total`,
    help: 'On-demand raster tiles above the baked zooms (overzoom: render), by outcome: memory or disk (cache hits), rendered (metatiles), failed, refused (queue full), deadline (request timed out)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  /** The on-demand renderers' queue lengths (one per open build version). */
  private readonly renderQueues = new Set<() => number>();
  private readonly buildInfo = new Gauge({
    name: `${PREFIX}build_info`,
    help: 'The build being served (1 per served build id and version)',
    labelNames: ['build_id', 'version'] as const,
    aggregator: 'max',
    registers: [this.registry],
  });

  constructor() {
    const watched = () => this.liveCaches();
    new Counter({
      name: `${PREFIX}cache_hits_total`,
      help: 'Cache lookups that found their entry, by cache',
      labelNames: ['cache'] as const,
      registers: [this.registry],
      collect() {
        for (const [w, s] of watched()) {
          this.inc({ cache: w.name }, s.hits - w.hits);
          w.hits = s.hits;
        }
      },
    });
    new Counter({
      name: `${PREFIX}cache_misses_total`,
      help: 'Cache lookups that did not find their entry, by cache',
      labelNames: ['cache'] as const,
      registers: [this.registry],
      collect() {
        for (const [w, s] of watched()) {
          this.inc({ cache: w.name }, s.misses - w.misses);
          w.misses = s.misses;
        }
      },
    });
    new Gauge({
      name: `${PREFIX}cache_bytes`,
      help: 'Bytes held by a cache, by cache',
      labelNames: ['cache'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [w, s] of watched()) this.inc({ cache: w.name }, s.bytes);
      },
    });
    const queues = this.renderQueues;
    new Gauge({
      name: `${PREFIX}render_queue`,
      help: 'On-demand renders waiting or running (overzoom: render)',
      registers: [this.registry],
      collect() {
        let n = 0;
        for (const q of queues) n += q();
        this.set(n);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
  }

  /** The watched caches still alive (dropped ones are forgotten; their counts stay in the counters). */
  private liveCaches(): [WatchedCache, CacheStats][] {
    const live: [WatchedCache, CacheStats][] = [];
    for (const w of this.caches) {
      const s = w.ref.deref();
      if (s) live.push([w, s]);
      else this.caches.delete(w);
    }
    return live;
  }

  /** Count the lookups and size of `stats` under `name` from now on (read at each scrape). */
  watchCache(name: string, stats: CacheStats): void {
    this.caches.add({ name, ref: new WeakRef(stats), hits: stats.hits, misses: stats.misses });
  }

  /** One answered request (the app's onResponse hook). */
  request(kind: RouteKind, reply: FastifyReply): void {
    const status = reply.statusCode;
    this.requests.add(`${kind} ${status}`, () => ({ kind, status }));
    this.latency.observe({ kind }, reply.elapsedTime / 1000);
    const length = Number(reply.getHeader('content-length'));
    if (length > 0) this.bytesSent.add(kind, () => ({ kind }), length);
  }

  /** One outcome of an on-demand tile (static-server/overzoom/render.ts). */
  rendered(outcome: 'memory' | 'disk' | 'rendered' | 'failed' | 'refused' | 'deadline'): void {
    this.renders.inc({ outcome });
  }

  /** Report `length()` as part of the render queue from now on; returns the function that stops it. */
  watchRenderQueue(length: () => number): () => void {
    this.renderQueues.add(length);
    return () => this.renderQueues.delete(length);
  }

  /** Points answered by one /height request. */
  heights(points: number): void {
    this.heightPoints.inc(points);
  }

  /** A store read listener for a store of kind `store` (`local` or `http`). */
  storeListener(store: string): (o: ReadOutcome) => void {
    return (o) => {
      this.storeReads.inc({ store, outcome: o.ok ? 'ok' : 'error' });
      if (o.bytes) this.storeBytes.inc({ store }, o.bytes);
      if (o.error) {
        this.storeErrors.inc({ store, kind: o.error.kind });
        if (o.error.kind === 'timeout') this.storeTimeouts.inc({ store });
      }
    };
  }

  /** Set the served build (one labelled series at 1). */
  serving(manifest: Pick<Manifest, 'generatedAt' | 'version'>, buildId?: string): void {
    this.buildInfo.reset();
    this.buildInfo.set(servedBuild(manifest, buildId), 1);
  }

  /** This process's metrics in the Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

let processMetrics: ServerMetrics | undefined;
/** The metrics of this process (created on first use). */
export function serverMetrics(): ServerMetrics {
  processMetrics ??= new ServerMetrics();
  return processMetrics;
}

/** The kind of a request, from its matched route (and the tileset's kind for data tiles). */
export function routeKind(req: FastifyRequest, manifest: Manifest): RouteKind {
  const url = req.routeOptions.url;
  if (url === undefined) return 'other';
  if (url === DATA_TILE_ROUTE) {
    const id = (req.params as { tileset?: string }).tileset;
    const kind = id !== undefined ? manifest.tilesets[id]?.kind : undefined;
    return kind === 'terrain' || kind === 'raster' ? kind : 'vector';
  }
  if (url === STYLE_FILE_ROUTE) {
    const file = (req.params as { file?: string }).file;
    return file?.startsWith('sprite') ? 'sprite' : file === 'rendered.json' ? 'tilejson' : 'style';
  }
  return KIND_BY_ROUTE[url] ?? 'other';
}

/** The Prometheus text format's content type. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
