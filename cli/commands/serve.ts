/** `tilebake serve --out DIR|URL|s3://…`: the HTTP server (static-server/serve.ts). */
import type { Argv } from 'yargs';
import { S3_ENDPOINT_OPTION } from '../options.ts';
import { RENDER_DEFAULTS } from '../../static-server/overzoom/policy.ts';
import { DEFAULT_MAX_STATIC_BODY } from '../../static-server/static-map/params.ts';
import { DEFAULT_READ_POLICY } from '../../lib/store-read.ts';

/** Adds the `serve` command to the program. */
export function addServeCommand(y: Argv): Argv {
  return y.command(
    'serve',
    'Serve a build folder (local path, http(s):// base URL or s3://bucket/prefix of object storage)',
    (y) =>
      y
        .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Build folder, http(s):// base URL, or s3://bucket/prefix (read with AWS credentials)' })
        .option('s3-endpoint', S3_ENDPOINT_OPTION)
        .option('port', { type: 'number', default: 8080, describe: 'Port for everything' })
        .option('host', { type: 'string', default: '0.0.0.0', describe: 'Address to listen on' })
        .option('routing-port', { type: 'number', describe: 'Also serve /height on this port' })
        .option('metrics-port', { type: 'number', describe: 'Also serve GET /metrics (Prometheus, all workers summed) on this port, without auth' })
        .option('public-url', { type: 'string', describe: 'Base URL clients use (for TileJSON and style URLs)' })
        .option('tokens-file', { type: 'string', describe: 'Bearer tokens, one per line (`sha256:<hex>` for a hash)' })
        .option('auth', { type: 'boolean', default: true, describe: 'Require bearer tokens (--no-auth to disable)' })
        .option('keys', { type: 'string', describe: 'Keys file: secret and origin keys, scopes, rate limits, quotas (docs/keys.md); reloaded on change and SIGHUP' })
        .option('limits', { type: 'string', describe: 'redis://… to share rate limits and quotas between servers (default: this server\'s own)' })
        .option('state-dir', { type: 'string', describe: 'Folder of usage and quota counts (default: <out>/.state)' })
        .option('workers', { type: 'number', describe: 'HTTP worker processes (default: CPUs this process may use: the Slurm allocation, the cgroup CPU quota or the CPU affinity, the fewest)' })
        .option('cache-control', { type: 'string', describe: 'Cache-Control of tiles (default: "private, max-age=86400" with auth, "public, …" with --no-auth)' })
        .option('cors', { type: 'string', default: '*', describe: 'Access-Control-Allow-Origin (empty to disable)' })
        .option('cache-mb', { type: 'number', default: 256, describe: 'Memory for cached tiles and elevation blocks, per worker (MB)' })
        .option('render-cache', { type: 'string', describe: 'Folder of the on-disk cache of tiles rendered on demand (styles with "overzoom": "render"; default: <tmp>/tilebake-render-cache)' })
        .option('render-cache-mb', { type: 'number', default: RENDER_DEFAULTS.cacheMb, describe: 'Size cap of that cache, all workers together (MB; least recently used tiles go first)' })
        .option('render-queue', { type: 'number', default: RENDER_DEFAULTS.queue, describe: 'On-demand renders that may wait for a browser, per worker (beyond: 503 with Retry-After)' })
        .option('render-timeout-ms', { type: 'number', default: RENDER_DEFAULTS.timeoutMs, describe: 'Longest a request waits for its on-demand render (then 504)' })
        .option('render-workers', { type: 'number', default: RENDER_DEFAULTS.workers, describe: 'Browsers rendering on demand, per worker (started on the first render)' })
        .option('search-cache', { type: 'string', describe: 'Folder of local copies of search indexes when serving from object storage (SQLite reads local files; default: <tmp>/tilebake-search-cache)' })
        .option('store-timeout-ms', { type: 'number', default: DEFAULT_READ_POLICY.timeoutMs, describe: 'Deadline of one read from the build folder or object storage, retries included (ms)' })
        .option('store-retries', { type: 'number', default: DEFAULT_READ_POLICY.retries, describe: 'Retries of a read after a transient failure (connection error, HTTP 5xx)' })
        .option('versioned-urls', { type: 'boolean', default: true, describe: 'Put the build version in the URLs of TileJSON and style.json (/v/{build}/…, cached for a year; --no-versioned-urls for plain URLs)' })
        .option('max-pack-tiles', { type: 'number', default: 200_000, describe: 'Largest pack GET /packs/… answers, in tiles (larger ones: 400 with the estimate)' })
        .option('max-static-body', { type: 'number', default: DEFAULT_MAX_STATIC_BODY, describe: 'Largest GeoJSON body of a static map (POST /styles/{style}/static/…), in bytes (larger ones: 413)' })
        .option('version-poll-ms', { type: 'number', default: 2000, describe: 'How often to check for a newly published build version (0: never; a local folder is also watched, SIGHUP checks at once)' })
        .option('log-level', { type: 'string', default: 'info', describe: 'pino log level' }),
    async (a) => {
      const { serve } = await import('../../static-server/serve.ts');
      await serve({
        out: a.out,
        s3Endpoint: a['s3-endpoint'],
        port: a.port,
        host: a.host,
        routingPort: a['routing-port'],
        metricsPort: a['metrics-port'],
        publicUrl: a['public-url'],
        tokensFile: a['tokens-file'],
        keysFile: a.keys,
        limits: a.limits,
        stateDir: a['state-dir'],
        auth: a.auth,
        workers: a.workers,
        cacheControl: a['cache-control'],
        storeTimeoutMs: a['store-timeout-ms'],
        storeRetries: a['store-retries'],
        cors: a.cors,
        cacheMb: a['cache-mb'],
        renderCache: a['render-cache'],
        renderCacheMb: a['render-cache-mb'],
        renderQueue: a['render-queue'],
        renderTimeoutMs: a['render-timeout-ms'],
        renderWorkers: a['render-workers'],
        searchCache: a['search-cache'],
        versionPollMs: a['version-poll-ms'],
        maxPackTiles: a['max-pack-tiles'],
        maxStaticBody: a['max-static-body'],
        versionedUrls: a['versioned-urls'],
        logLevel: a['log-level'],
      });
    },
  );
}
