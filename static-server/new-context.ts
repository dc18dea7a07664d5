/** The ServerContext of an app: over an open store and a manifest, with cache headers, logger and health tracker. */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Manifest } from '../lib/manifest.ts';
import type { Store } from '../lib/storage.ts';
import { createLogger } from './app.ts';
import { cachePolicy, type ServeOptions, type ServerContext } from './context.ts';
import { FailureLog } from './failure-log.ts';
import { StoreHealth } from './store-health.ts';

/**
 * The context of an app over an open store and a manifest (`serve` passes the store's; the export one
 * whose styles offer only the baked zooms): cache headers from the options; a logger and health tracker unless given.
 */
export function contextOver(store: Store, manifest: Manifest, options: ServeOptions, given: { log?: Logger; health?: StoreHealth } = {}): ServerContext {
  const log = given.log ?? createLogger(options.logLevel);
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  return {
    store,
    manifest,
    options,
    baseUrl: publicUrl ? () => publicUrl : (req: FastifyRequest) => `${req.protocol}://${req.host}`,
    cache: cachePolicy(options),
    health: given.health ?? healthOf(() => store, log),
    log,
  };
}

/** The health tracker of `store()`: probes its manifest, logs failures rate-limited. */
export function healthOf(store: () => Store, log: Logger): StoreHealth {
  return new StoreHealth(() => store().readFile(MANIFEST_FILE), new FailureLog(log));
}

/** The file /health reads to probe the store. */
const MANIFEST_FILE = 'manifest.json';
