/**
 * The keys of a running server: the key ring (keys file plus `TILEBAKE_TOKENS` / `--tokens-file`),
 * reloaded on SIGHUP and when the file changes; the limiter (own, the cluster primary's over IPC, or Redis);
 * usage counting. `startServer` creates one and hands it to every app it builds.
 */
import cluster from 'node:cluster';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { UserError } from '../../lib/errors.ts';
import { loadTokens, NO_TOKENS_MESSAGE, TOKENS_ENV } from '../auth.ts';
import type { ServeOptions } from '../context.ts';
import type { RouteKind } from '../metrics.ts';
import { keyOf, type KeyGate } from './gate.ts';
import { KeyRing } from './key-ring.ts';
import { keysOfTokens, loadKeysFile, type Key } from './keys-file.ts';
import type { Limiter, LimitsStatus } from './limits.ts';
import { sendUsageToPrimary, startLimitsOwner, startWorkerLimiter, type LimitsOwner, type OwnerOptions } from './owner.ts';
import { pointsOf, UsageRecorder } from './usage.ts';

/** Delay between a change event of the keys file and the reload (an editor's save is several events). */
const RELOAD_DEBOUNCE_MS = 100;

/** The server's state folder: `--state-dir`, else `<out>/.state` for a local build folder, else `./.tilebake-state`. */
export function stateDirOf(options: Pick<ServeOptions, 'out' | 'stateDir'>): string {
  if (options.stateDir) return resolve(options.stateDir);
  return /^https?:\/\//i.test(options.out) ? resolve('.tilebake-state') : join(resolve(options.out), '.state');
}

/** What the owner of the limits needs, when the options ask for limits (a keys file). */
export function ownerOptionsOf(options: ServeOptions): OwnerOptions | undefined {
  if (!options.auth || options.keysFile === undefined) return undefined;
  return { stateDir: stateDirOf(options), ...(options.limits ? { limits: options.limits } : {}) };
}

/** Every configured key; throws UserError when a file is bad or there is no key at all. */
export async function loadAllKeys(options: Pick<ServeOptions, 'keysFile' | 'tokensFile'>, tokenHashes?: readonly Buffer[]): Promise<{ fileKeys: Key[]; tokenKeys: Key[] }> {
  const fileKeys = options.keysFile !== undefined ? await loadKeysFile(options.keysFile) : [];
  const env = process.env[TOKENS_ENV];
  const haveTokens = (env ?? '').trim() !== '' || options.tokensFile !== undefined;
  const tokenKeys = tokenHashes ? keysOfTokens(tokenHashes.map((hash) => ({ hash }))) : haveTokens ? keysOfTokens(await loadTokens(env, options.tokensFile)) : [];
  if (fileKeys.length + tokenKeys.length === 0) {
    throw new UserError(options.keysFile !== undefined ? `${options.keysFile}: no keys (and no bearer tokens configured)` : `${NO_TOKENS_MESSAGE}, or give a keys file with \`--keys keys.json\``);
  }
  return { fileKeys, tokenKeys };
}

/** The keys part of a running server. */
export interface KeysRuntime {
  gate: KeyGate;
  /** Count an answered request for its key (the app's onResponse hook). */
  record(req: FastifyRequest, reply: FastifyReply, kind: RouteKind): void;
  /** The limits' state for /health, when limits are on. */
  status(): LimitsStatus | undefined;
  /** Read the keys file again (SIGHUP); a bad file is logged and the previous keys kept. */
  reload(): Promise<void>;
  close(): Promise<void>;
}

/** Start the keys of a server (null with --no-auth). `tokenHashes` replaces the token sources (tests). */
export async function startKeys(options: ServeOptions, log: Logger, tokenHashes?: readonly Buffer[] | null): Promise<KeysRuntime | null> {
  if (!options.auth || tokenHashes === null) return null;
  const { fileKeys, tokenKeys } = await loadAllKeys(options, tokenHashes);
  const ring = new KeyRing([...fileKeys, ...tokenKeys]);
  const ownerOpts = ownerOptionsOf(options);
  let owner: LimitsOwner | undefined;
  let limiter: Limiter | undefined;
  let recorder: UsageRecorder | undefined;
  if (ownerOpts && cluster.isWorker) {
    limiter = await startWorkerLimiter(ownerOpts);
    recorder = new UsageRecorder(sendUsageToPrimary);
  } else if (ownerOpts) {
    owner = await startLimitsOwner(ownerOpts, log);
    limiter = owner.limiter;
    recorder = new UsageRecorder((rows) => owner!.usage.add(rows));
  } else {
    recorder = new UsageRecorder(() => undefined);
  }

  const file = options.keysFile;
  const reload = async () => {
    if (file === undefined) return;
    try {
      const keys = await loadKeysFile(file);
      ring.replace([...keys, ...tokenKeys]);
      log.info({ keys: keys.map((k) => k.name) }, 'keys file loaded');
    } catch (e) {
      log.error({ error: (e as Error).message }, 'keys file rejected: keeping the previous keys');
    }
  };
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  if (file !== undefined) {
    try {
      // Editors and deploy tools replace the file by a rename: watch its folder.
      watcher = watch(dirname(resolve(file)), (_e, name) => {
        if (name !== null && name !== basename(file)) return;
        clearTimeout(debounce);
        debounce = setTimeout(() => void reload(), RELOAD_DEBOUNCE_MS);
      });
      watcher.on('error', () => watcher?.close());
      watcher.unref();
    } catch {
      // No inotify: SIGHUP still reloads.
    }
  }
  return {
    gate: { ring, ...(limiter ? { limiter } : {}) },
    record(req, reply, kind) {
      const key = keyOf(req);
      if (!key) return;
      recorder!.record(key, kind, req, reply);
      const points = pointsOf(req);
      if (points > 0 && key.quota?.heightPoints !== undefined) limiter?.points(key, points);
    },
    status: () => limiter?.status(),
    reload,
    async close() {
      clearTimeout(debounce);
      watcher?.close();
      recorder?.close();
      await limiter?.close();
      await owner?.close();
    },
  };
}
