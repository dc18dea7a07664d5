import cluster, { type Worker } from 'node:cluster';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { availableCpus } from '../lib/cpus.ts';
import { resolveCurrentVersion, versionStore, type CurrentVersion } from '../lib/build-version.ts';
import { loadManifest, type Manifest } from '../lib/manifest.ts';
import { openStore, type Store } from '../lib/storage.ts';
import { DEFAULT_READ_POLICY, type ReadPolicy } from '../lib/store-read.ts';
import { buildApp, createLogger, type AppRole } from './app.ts';
import { archivesOf } from './archives.ts';
import { loadAllKeys, ownerOptionsOf, startKeys, type KeysRuntime } from './keys/runtime.ts';
import { serveLimitsToWorkers } from './keys/owner.ts';
import { cachePolicy, type ServeOptions, type ServerContext } from './context.ts';
import { clientErrorHandler, MAX_HEADER_BYTES } from './errors.ts';
import { DEFAULT_VERSION_POLL_MS, VersionFollower, type OpenedVersion } from './follow.ts';
import { enableClusterMetrics, startMetricsListener, type MetricsListener } from './metrics-cluster.ts';
import { serverMetrics } from './metrics.ts';
import { contextOver, healthOf } from './new-context.ts';
import type { StoreHealth } from './store-health.ts';
import { startRenderHost } from '../workers/render-host/server.ts';
import { RENDER_PAGE_DIR } from '../workers/render-browser.ts';
import { useVersionedUrls } from './versioned.ts';
import { recordDataTimestamps } from './data-age.ts';

/** How long in-flight requests may take to finish after SIGTERM before the process gives up. */
export const SHUTDOWN_GRACE_MS = 30_000;
/** Exit code when shutdown did not finish in time or a worker could not start. */
const EXIT_FAILURE = 1;
/** Messages between the cluster primary and its workers. */
const enum Msg {
  Ready = 'tilebake:ready',
  Shutdown = 'tilebake:shutdown',
  /** Check for a new build version now (the primary forwards SIGHUP). */
  CheckVersion = 'tilebake:check-version',
}
/** Keep-alive timeout of the listeners (fastify's default: longer than common load balancers' idle timeout). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** A started server: its listener URLs and a graceful close. */
export interface RunningServer {
  /** `http://host:port` of the main listener. */
  url: string;
  /** `http://host:port` of the routing listener (/height), when --routing-port is set. */
  routingUrl?: string;
  /** URL of the --metrics-port listener's /metrics, when it runs in this process. */
  metricsUrl?: string;
  /** The current version's fastify apps (tests use `inject`). */
  readonly apps: FastifyInstance[];
  /** The build version being served (id undefined: a legacy folder). */
  readonly version: CurrentVersion;
  /** Check for a newly published version now and switch to it (what SIGHUP does); true when it switched. */
  checkVersion(): Promise<boolean>;
  /** Read the keys file again (what SIGHUP does too). */
  reloadKeys(): Promise<void>;
  /** Stop accepting, let in-flight requests finish, close the archives. */
  close(): Promise<void>;
}

/** Extra inputs of `startServer` (tests capture the log stream). */
export interface StartOptions {
  /** Token hashes already loaded; default: from TILEBAKE_TOKENS and --tokens-file. */
  tokenHashes?: readonly Buffer[] | null;
  logStream?: NodeJS.WritableStream;
}

/** `http://host:port` of a listening server. */
function urlOf(server: Server): string {
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return `http://${host}:${a.port}`;
}

/** The store's read policy from the options (--store-timeout-ms, --store-retries). */
export function readPolicyOf(options: Pick<ServeOptions, 'storeTimeoutMs' | 'storeRetries'>): ReadPolicy {
  return {
    ...DEFAULT_READ_POLICY,
    ...(options.storeTimeoutMs !== undefined ? { timeoutMs: options.storeTimeoutMs } : {}),
    ...(options.storeRetries !== undefined ? { retries: options.storeRetries } : {}),
  };
}

/** The store for the options, with its read policy; `health` and the metrics hear about every read. */
function storeFor(options: ServeOptions, health?: () => StoreHealth): Store {
  const metrics = health && serverMetrics().storeListener(/^https?:\/\//i.test(options.out) ? 'http' : /^s3:\/\//i.test(options.out) ? 's3' : 'local');
  return openStore(options.out, {
    policy: readPolicyOf(options),
    s3Endpoint: options.s3Endpoint,
    onRead:
      health &&
      ((o) => {
        health().onRead(o);
        metrics!(o);
      }),
  });
}

/**
 * Everything route modules share: the store of one build version (reads with deadline and retries,
 * watched by the health tracker), its manifest, the cache headers, the logger. `version` defaults to
 * the current one (lib/build-version.ts). Throws a StoreError or UserError when the manifest cannot be read.
 */
export async function createServerContext(options: ServeOptions, logStream?: NodeJS.WritableStream, version?: CurrentVersion): Promise<ServerContext> {
  const log = createLogger(options.logLevel, logStream);
  const root: Store = storeFor(options, () => health);
  let store = root;
  // Created before the first read (the pointer's), probing the version's manifest once it is known.
  const health = healthOf(() => store, log);
  const served = version ?? (await resolveCurrentVersion(root));
  store = versionStore(root, served);
  const ctx = contextOver(store, await loadManifest(store), options, { log, health });
  ctx.root = root;
  ctx.build = served.id;
  // Raster tiles above the baked zooms in `render` mode: the page reads this version's files (static-server/overzoom/render.ts).
  ctx.startRenderHost = () => startRenderHost({ store, manifest: ctx.manifest, pageDir: RENDER_PAGE_DIR, cacheMb: RENDER_HOST_CACHE_MB });
  if (options.versionedUrls && served.id !== undefined) useVersionedUrls(ctx, served.id);
  serverMetrics().serving(ctx.manifest, served.id);
  recordDataTimestamps(ctx.manifest);
  return ctx;
}

/** Memory of the render host of on-demand renders (its style files and the page's vector tiles), MB. */
const RENDER_HOST_CACHE_MB = 64;

/** Open one build version: its context and an app per listener role. */
async function openVersion(options: ServeOptions, start: StartOptions, keys: KeysRuntime | null, roles: AppRole[], version: CurrentVersion): Promise<OpenedVersion> {
  const ctx = await createServerContext(options, start.logStream, version);
  const apps = new Map<AppRole, FastifyInstance>();
  try {
    for (const role of roles) apps.set(role, await buildApp(ctx, { role, tokenHashes: null, keys }));
  } catch (e) {
    await Promise.allSettled([...apps.values()].map((a) => a.close()));
    await archivesOf(ctx).close();
    ctx.health.failures.close();
    throw e;
  }
  return { version, ctx, apps };
}

/** Listen on `port` with `handler` (Node's HTTP server with the app's header limit and JSON client errors). */
async function listen(handler: Parameters<typeof createServer>[1], port: number, options: ServeOptions): Promise<Server> {
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, handler);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on('clientError', clientErrorHandler(options.cors));
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(port, options.host, () => {
      server.off('error', rej);
      res();
    });
  });
  return server;
}

/** Stop accepting connections and close the idle ones; resolves when every connection is gone. */
function closeServer(server: Server): Promise<void> {
  return new Promise((res) => {
    if (!server.listening) return res();
    server.close(() => res());
    server.closeIdleConnections();
  });
}

/**
 * Open the current build version, build the app(s) and listen; then follow the folder's pointer
 * (static-server/follow.ts): a newly published version is opened and new requests switch to it.
 * Used in-process and by each cluster worker.
 */
export async function startServer(options: ServeOptions, start: StartOptions = {}): Promise<RunningServer> {
  const keys = await startKeys(options, createLogger(options.logLevel, start.logStream), start.tokenHashes);
  const roles: AppRole[] = options.routingPort !== undefined ? ['tiles', 'routing'] : ['tiles'];
  const root = storeFor(options);
  const open = (v: CurrentVersion) => openVersion(options, start, keys, roles, v);
  const first = await open(await resolveCurrentVersion(root)).catch(async (e: unknown) => {
    await keys?.close();
    throw e;
  });
  const follower = await VersionFollower.start({ root, first, open, log: first.ctx.log, cors: options.cors, pollMs: options.versionPollMs ?? DEFAULT_VERSION_POLL_MS });
  const servers: Server[] = [];
  let metricsListener: MetricsListener | undefined;
  const closeAll = async () => {
    const closed = Promise.all(servers.map(closeServer));
    await metricsListener?.close();
    await follower.close();
    for (const s of servers) s.closeIdleConnections();
    await closed;
    await keys?.close();
  };
  try {
    servers.push(await listen(follower.handler('tiles'), options.port, options));
    if (options.routingPort !== undefined) servers.push(await listen(follower.handler('routing'), options.routingPort, options));
    for (const s of servers) first.ctx.log.info({ build: first.version.id }, `Server listening at ${urlOf(s)}`);
    // In a cluster the primary runs the metrics listener, for all workers.
    if (options.metricsPort !== undefined && !cluster.isWorker) metricsListener = await startMetricsListener(options.metricsPort, options.host);
  } catch (e) {
    await closeAll();
    throw e;
  }
  return {
    url: urlOf(servers[0]),
    routingUrl: servers[1] && urlOf(servers[1]),
    metricsUrl: metricsListener?.url,
    get apps() {
      return follower.apps;
    },
    get version() {
      return follower.version;
    },
    checkVersion: () => follower.check(),
    reloadKeys: async () => keys?.reload(),
    close: closeAll,
  };
}

/** Close on SIGTERM/SIGINT (or `onMessage` shutdown), finishing in-flight requests, then exit 0. */
function closeOnSignals(server: RunningServer, log: Logger): void {
  let closing = false;
  const shutdown = (why: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal: why }, 'shutting down: finishing in-flight requests');
    setTimeout(() => {
      log.error(`in-flight requests still running after ${SHUTDOWN_GRACE_MS} ms; exiting`);
      process.exit(EXIT_FAILURE);
    }, SHUTDOWN_GRACE_MS).unref();
    server.close().then(
      () => process.exit(0),
      (e: unknown) => {
        log.error({ err: e }, 'error while closing');
        process.exit(EXIT_FAILURE);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const reload = () => {
    void server.checkVersion();
    void server.reloadKeys();
  };
  process.on('SIGHUP', reload);
  process.on('message', (m) => {
    if (m === Msg.Shutdown) shutdown('primary');
    if (m === Msg.CheckVersion) reload();
  });
}

/** Fork `count` workers sharing the ports; restart crashed ones; on SIGTERM stop them all, then exit. */
async function runPrimary(options: ServeOptions, count: number, log: Logger): Promise<void> {
  // Fail early, once, with a clear message, instead of in every worker.
  if (options.auth) await loadAllKeys(options);
  const root = storeFor(options);
  await loadManifest(versionStore(root, await resolveCurrentVersion(root)));
  enableClusterMetrics();
  // One limiter and usage store for all workers (keys/owner.ts).
  const ownerOpts = ownerOptionsOf(options);
  if (ownerOpts) await serveLimitsToWorkers(ownerOpts, log);
  const metricsUrl = options.metricsPort !== undefined ? (await startMetricsListener(options.metricsPort, options.host)).url : undefined;

  let shuttingDown = false;
  let readyCount = 0;
  const everReady = new WeakSet<Worker>();
  const fork = () => {
    const w = cluster.fork();
    w.on('message', (m: { type?: string; url?: string; routingUrl?: string }) => {
      if (m?.type !== Msg.Ready) return;
      everReady.add(w);
      // A worker still starting when the shutdown began had no listener for it: tell it again now.
      if (shuttingDown) {
        if (w.isConnected()) w.send(Msg.Shutdown);
        return;
      }
      readyCount++;
      if (readyCount === count) {
        log.info({ url: m.url, routingUrl: m.routingUrl, metricsUrl, workers: count, out: options.out }, 'tilebake listening');
      }
    });
  };
  let failedWhileStopping = false;
  cluster.on('exit', (w, code, signal) => {
    if (shuttingDown) {
      if (code !== 0) failedWhileStopping = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failedWhileStopping ? EXIT_FAILURE : 0);
      return;
    }
    if (!everReady.has(w)) {
      log.error({ code, signal }, 'a worker failed to start; stopping');
      shuttingDown = true;
      for (const other of Object.values(cluster.workers ?? {})) other?.kill();
      failedWhileStopping = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(EXIT_FAILURE);
      return;
    }
    log.error({ code, signal }, 'a worker died; starting a new one');
    fork();
  });
  const shutdown = (why: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal: why }, 'shutting down workers');
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(Msg.Shutdown);
    setTimeout(() => process.exit(EXIT_FAILURE), SHUTDOWN_GRACE_MS + 1000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Every worker follows the pointer on its own; SIGHUP to the primary makes all of them check now.
  process.on('SIGHUP', () => {
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(Msg.CheckVersion);
  });
  for (let i = 0; i < count; i++) fork();
}

/** Start-up warnings about options that expose data: no auth, or shared caching of authenticated answers. */
export function startupWarnings(options: ServeOptions): string[] {
  if (!options.auth) {
    return [`serving without authentication (--no-auth): anyone who can reach ${options.host}:${options.port} can read every tile and height`];
  }
  if (/(^|[\s,])public($|[\s,])/i.test(cachePolicy(options).data)) {
    return ['--cache-control is "public" while bearer auth is on: a shared cache (CDN, proxy) may store token-protected answers and serve them without a token'];
  }
  return [];
}

/**
 * `tilebake serve`: one HTTP worker per core sharing the port(s) (`--workers 1` runs in this
 * process). Refuses to start without tokens unless `--no-auth`. SIGTERM stops accepting
 * connections, lets in-flight requests finish and exits 0.
 */
export async function serve(options: ServeOptions): Promise<void> {
  const log = pino({ level: options.logLevel });
  const count = Math.max(1, options.workers ?? availableCpus());
  if (!cluster.isWorker) for (const w of startupWarnings(options)) log.warn(w);
  if (cluster.isWorker) {
    enableClusterMetrics();
    const server = await startServer(options);
    closeOnSignals(server, log);
    process.send?.({ type: Msg.Ready, url: server.url, routingUrl: server.routingUrl });
    return;
  }
  if (count === 1) {
    const server = await startServer(options);
    closeOnSignals(server, log);
    log.info({ url: server.url, routingUrl: server.routingUrl, metricsUrl: server.metricsUrl, workers: 1, out: options.out }, 'tilebake listening');
    return;
  }
  await runPrimary(options, count, log);
}
