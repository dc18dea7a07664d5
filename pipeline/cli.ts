import yargs, { type Argv } from 'yargs';
import { isUserError, UserError } from '../lib/errors.ts';
import { DEFAULT_READ_POLICY, isStoreError } from '../lib/store-read.ts';
import { RENDER_DEFAULTS } from '../static-server/overzoom/policy.ts';
import { runCommands } from './commands/run.ts';
import { S3_ENDPOINT_OPTION } from './commands/s3-endpoint.ts';
import { usageCommand } from './commands/usage.ts';
import { updateCommand } from './update/command.ts';

/** Parse `w,s,e,n` for --bbox. */
function parseBBox(s: string | undefined): [number, number, number, number] | undefined {
  if (s === undefined) return undefined;
  const n = s.split(',').map((v) => Number(v.trim()));
  const ok = n.length === 4 && n.every(Number.isFinite) && n[0] >= -180 && n[2] <= 180 && n[1] >= -90 && n[3] <= 90 && n[0] < n[2] && n[1] < n[3];
  if (!ok) throw new UserError(`--bbox: expected west,south,east,north in degrees with west < east and south < north (got "${s}")`, { exitCode: 2 });
  return [n[0], n[1], n[2], n[3]];
}

/** The yargs program; exported for tests of the command-line contract. */
export function program(argv: string[]): Argv {
  return yargs(argv)
    .scriptName('tilebake')
    .usage('$0 <command> [options]\n\nBake vector, raster and elevation outputs ahead of time, then serve them.')
    .command(
      'build',
      'Run the build described by a config file (vector, render, elevation stages) into a new version <out>/builds/<id>/, reusing what is unchanged, and make it current',
      (y) =>
        y
          .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'Build config JSON' })
          .option('out', { alias: 'o', type: 'string', describe: 'Output folder (default: the config\'s "out")' })
          .option('only', { choices: ['vector', 'render', 'elevation'] as const, describe: 'Run one stage only' })
          .option('workers', { type: 'number', describe: 'Render pool size: browsers rendering at once (default: one per two CPUs this process may use: the Slurm allocation, the cgroup CPU quota or the CPU affinity, the fewest)' })
          .option('full', { type: 'boolean', default: false, describe: 'Build everything again instead of reusing the current version for unchanged inputs' })
          .option('keep', { type: 'number', default: 2, describe: 'Build versions kept in <out>/builds/ (the current one and versions a running server holds are always kept)' }),
      async (a) => {
        const { loadConfig } = await import('./config/index.ts');
        const { build } = await import('./build.ts');
        const { checkKeep } = await import('../lib/build-version.ts');
        const config = await loadConfig(a.config);
        await build(config, { out: a.out, only: a.only, workers: a.workers, full: a.full, keep: checkKeep(a.keep) });
      },
    )
    .command(
      'vector <input> <output>',
      'Pack vector tiles (MBTiles, PMTiles or a z/x/y folder) into a PMTiles v3 archive, or build OpenMapTiles-schema tiles from an .osm.pbf extract',
      (y) =>
        y
          .positional('input', { type: 'string', demandOption: true, describe: 'MBTiles file, PMTiles file, z/x/y.pbf folder or .osm.pbf extract' })
          .positional('output', { type: 'string', demandOption: true, describe: 'Output .pmtiles file' })
          .option('name', { type: 'string', describe: 'Metadata name' })
          .option('attribution', { type: 'string', describe: 'Metadata attribution' })
          .option('bbox', { type: 'string', describe: 'Clip an .osm.pbf input to west,south,east,north first' }),
      async (a) => {
        const { packVectorTiles } = await import('./vector.ts');
        await packVectorTiles(a.input, a.output, { name: a.name, attribution: a.attribution, bbox: parseBBox(a.bbox), bboxField: '--bbox' });
      },
    )
    .command(
      'inspect <archive>',
      'Print a PMTiles archive\'s header, tile count per zoom and metadata',
      (y) =>
        y
          .positional('archive', { type: 'string', demandOption: true, describe: 'A .pmtiles file' })
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' }),
      async (a) => {
        const { inspect } = await import('./inspect.ts');
        await inspect(a.archive, { json: a.json });
      },
    )
    .command(
      'elevation [dems..]',
      'Build the elevation index (and terrain tiles) from DEM files alone and record it in <out>/manifest.json',
      (y) =>
        y
          .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Output folder' })
          .option('precision', { type: 'number', default: 0.1, describe: 'Quantisation step in metres' })
          .option('terrain', { type: 'boolean', default: true, describe: 'Also write terrain-RGB tiles' })
          .option('encoding', { choices: ['terrarium', 'mapbox'] as const, default: 'terrarium' as const, describe: 'Terrain-RGB encoding' })
          .option('format', { choices: ['png', 'webp'] as const, default: 'png' as const, describe: 'Terrain tile format' })
          .option('maxzoom', { type: 'number', describe: 'Terrain tiles max zoom (default: from the DEMs\' resolution)' })
          .option('contours', { type: 'boolean', default: false, describe: 'Also write contour lines (tileset "contours", z11-14)' })
          .positional('dems', { type: 'string', array: true, describe: 'DEM files or globs (.hgt, .hgt.gz, .zip, GeoTIFF)' })
          .usage('$0 elevation --out DIR DEM...'),
      async (a) => {
        const { elevationCommand } = await import('./elevation.ts');
        const { contoursSchema } = await import('./config/elevation.ts');
        const dems = (a.dems ?? []).map(String);
        if (a.maxzoom !== undefined && !(Number.isInteger(a.maxzoom) && a.maxzoom >= 0 && a.maxzoom <= 20)) {
          const { UserError } = await import('../lib/errors.ts');
          throw new UserError(`--maxzoom: expected an integer 0..20 (got ${a.maxzoom})`, { exitCode: 2 });
        }
        await elevationCommand(a.out, dems, {
          precision: a.precision,
          terrain: a.terrain ? { id: 'terrain', encoding: a.encoding, format: a.format, minzoom: 0, maxzoom: a.maxzoom } : false,
          contours: a.contours ? contoursSchema.parse({}) : false,
        });
      },
    )
    .command(
      'merge <output> <partials..>',
      'Merge the partial archives of one archive from the shards of a run (what `publish` does per archive) into one PMTiles archive',
      (y) =>
        y
          .positional('output', { type: 'string', demandOption: true, describe: 'Final .pmtiles file' })
          .positional('partials', { type: 'string', array: true, demandOption: true, describe: 'Partial .pmtiles files' }),
      async (a) => {
        const { mergeArchives } = await import('./merge.ts');
        await mergeArchives(a.partials as string[], a.output);
      },
    )
    .command(runCommands)
    .command(
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
          .option('store-timeout-ms', { type: 'number', default: DEFAULT_READ_POLICY.timeoutMs, describe: 'Deadline of one read from the build folder or object storage, retries included (ms)' })
          .option('store-retries', { type: 'number', default: DEFAULT_READ_POLICY.retries, describe: 'Retries of a read after a transient failure (connection error, HTTP 5xx)' })
          .option('versioned-urls', { type: 'boolean', default: true, describe: 'Put the build version in the URLs of TileJSON and style.json (/v/{build}/…, cached for a year; --no-versioned-urls for plain URLs)' })
          .option('version-poll-ms', { type: 'number', default: 2000, describe: 'How often to check for a newly published build version (0: never; a local folder is also watched, SIGHUP checks at once)' })
          .option('log-level', { type: 'string', default: 'info', describe: 'pino log level' }),
      async (a) => {
        const { serve } = await import('../static-server/serve.ts');
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
          versionPollMs: a['version-poll-ms'],
          versionedUrls: a['versioned-urls'],
          logLevel: a['log-level'],
        });
      },
    )
    .command(
      'export',
      'Write a build as plain files in the URL layout of the interface (for nginx, a bucket or any static host), incrementally',
      (y) =>
        y
          .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Build folder or http(s):// base URL' })
          .option('to', { type: 'string', demandOption: true, describe: 'Export folder (new, empty, or a previous export: only changes are written)' })
          .option('public-url', { type: 'string', demandOption: true, describe: 'Base URL the export is served at (for TileJSON and style URLs)' })
          .option('only', { choices: ['tilesets', 'styles', 'fonts'] as const, array: true, describe: 'Export these parts only (others are left as they are)' })
          .option('list-changes', { type: 'boolean', default: false, describe: 'Print added, changed and removed paths on stdout, one per line' })
          .option('versioned-urls', { type: 'boolean', default: true, describe: 'Write the build under v/{build}/ too and hand out those URLs (cached for a year), as serve does' })
          .option('keep', { type: 'number', default: 2, describe: 'Build versions kept under v/ (the current one included), for maps opened before this export' })
          .option('nginx-conf', { type: 'string', describe: 'Also write an nginx configuration (the inside of http { }) serving the export' })
          .option('listen', { type: 'string', default: '8080', describe: 'nginx listen address: PORT or ADDR:PORT' })
          .option('tokens-file', { type: 'string', describe: 'Bearer tokens for nginx, one per line (TILEBAKE_TOKENS too)' })
          .option('keys', { type: 'string', describe: 'Keys file: its origin keys are accepted by nginx without a token (docs/keys.md)' })
          .option('auth', { type: 'boolean', default: true, describe: 'Require bearer tokens in nginx (--no-auth to disable)' })
          .option('cors', { type: 'string', default: '*', describe: 'Access-Control-Allow-Origin in nginx (empty to disable)' })
          .option('height-upstream', { type: 'string', default: '127.0.0.1:8081', describe: 'HOST:PORT of `tilebake serve --routing-port` for /height' }),
      async (a) => {
        const { exportCommand } = await import('./export/command.ts');
        await exportCommand({
          out: a.out,
          to: a.to,
          publicUrl: a['public-url'],
          only: a.only,
          listChanges: a['list-changes'],
          versionedUrls: a['versioned-urls'],
          keep: a.keep,
          nginxConf: a['nginx-conf'],
          listen: a.listen,
          tokensFile: a['tokens-file'],
          keysFile: a.keys,
          auth: a.auth,
          cors: a.cors,
          heightUpstream: a['height-upstream'],
        });
      },
    )
    .command(usageCommand)
    .command(updateCommand)
    .demandCommand(1, 'Name a command (see --help).')
    .strict()
    .help()
    .alias('help', 'h')
    .version(false)
    .wrap(Math.min(110, process.stdout.columns || 110));
}

/** Run the CLI; user errors print one message and exit non-zero, without a stack trace. */
export async function main(argv: string[]): Promise<void> {
  try {
    await program(argv)
      .fail((msg, err) => {
        if (err) throw err;
        process.stderr.write(`tilebake: ${msg}\nRun with --help for usage.\n`);
        process.exit(2);
      })
      .parseAsync();
  } catch (e) {
    if (isUserError(e)) {
      process.stderr.write(`tilebake: ${e.message}\n`);
      process.exit(e.exitCode);
    }
    if (isStoreError(e)) {
      // An unreachable or failing store: the message names the URL or file and the cause.
      process.stderr.write(`tilebake: ${e.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`tilebake: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  }
}
