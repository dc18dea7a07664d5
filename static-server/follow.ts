/**
 * Following the current build version (lib/build-version.ts) while serving: the listeners stay, the
 * apps behind them are swapped. A new version is noticed by watching a local folder's pointer, by
 * polling it (every `--version-poll-ms`; a conditional GET on object storage) and on `check()`
 * (SIGHUP). It is opened and its apps built first; then new requests go to it, requests already
 * running finish on the old one, which is closed once the last of them is done.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { pollCurrentVersion, versionPath, writeLease, type CurrentVersion } from '../lib/build-version.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { LocalStore, type Store } from '../lib/storage.ts';
import type { AppRole } from './app.ts';
import { archivesOf } from './archives.ts';
import type { ServerContext } from './context.ts';
import { errorBody } from './errors.ts';
import { serverMetrics } from './metrics.ts';
import { takeVersionPrefix } from './versioned.ts';

/** Default interval of the pointer poll, ms. */
export const DEFAULT_VERSION_POLL_MS = 2000;
/** Delay between a watch event and the check (a rename shows as several events). */
const WATCH_DEBOUNCE_MS = 50;
/** Older versions kept open for `/v/{build}/` requests (the least recently opened is closed first). */
const OLDER_VERSIONS_OPEN = 2;

/** One opened build version: its context and an app per listener role. */
export interface OpenedVersion {
  version: CurrentVersion;
  ctx: ServerContext;
  apps: Map<AppRole, FastifyInstance>;
}

interface Served extends OpenedVersion {
  inflight: number;
  /** Called (and cleared) when `inflight` drops to 0. */
  waiters: (() => void)[];
  /** Set once the version is being closed. */
  closed?: Promise<void>;
}

/** Resolves when no request runs on `v`. */
function drained(v: Served): Promise<void> {
  return v.inflight === 0 ? Promise.resolve() : new Promise<void>((res) => v.waiters.push(res));
}

/** Close a version's apps, archives and failure log. */
async function closeVersion(v: OpenedVersion): Promise<void> {
  await Promise.allSettled([...v.apps.values()].map((a) => a.close()));
  await archivesOf(v.ctx).close();
  v.ctx.health.failures.close();
}

/** Routes requests to the current version's apps and switches versions when a new one is published. */
export class VersionFollower {
  private current: Served;
  private readonly retired = new Set<Served>();
  /** Older versions opened for versioned URLs, by id (undefined: not on disk). */
  private readonly older = new Map<string, Promise<Served | undefined>>();
  private closing = false;
  private checking: Promise<boolean> | undefined;
  private again = false;
  private pointerFailing = false;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;

  private constructor(
    first: OpenedVersion,
    private readonly root: Store,
    private readonly open: (v: CurrentVersion) => Promise<OpenedVersion>,
    private readonly log: Logger,
    private readonly cors: string,
  ) {
    this.current = { ...first, inflight: 0, waiters: [] };
  }

  /**
   * Serve `first` (opened from `root`) and follow `root`'s pointer: watched when local, polled every
   * `pollMs` (0: only on `check()`).
   */
  static async start(opts: { root: Store; first: OpenedVersion; open: (v: CurrentVersion) => Promise<OpenedVersion>; log: Logger; cors: string; pollMs: number }): Promise<VersionFollower> {
    const f = new VersionFollower(opts.first, opts.root, opts.open, opts.log, opts.cors);
    await f.lease();
    if (opts.pollMs > 0) {
      f.timer = setInterval(() => void f.check(), opts.pollMs);
      f.timer.unref();
      if (opts.root instanceof LocalStore) {
        try {
          // The pointer is replaced by a rename: watch the folder, not the file.
          f.watcher = watch(opts.root.location, (_event, name) => {
            if (name !== null && name !== 'current.json') return;
            clearTimeout(f.debounce);
            f.debounce = setTimeout(() => void f.check(), WATCH_DEBOUNCE_MS);
            f.debounce.unref();
          });
          f.watcher.on('error', () => f.watcher?.close());
          f.watcher.unref();
        } catch {
          // No inotify (some network file systems): the poll alone notices new versions.
        }
      }
    }
    return f;
  }

  /** The version new requests go to. */
  get version(): CurrentVersion {
    return this.current.version;
  }

  /** The current version's apps. */
  get apps(): FastifyInstance[] {
    return [...this.current.apps.values()];
  }

  /** The current version's context. */
  get ctx(): ServerContext {
    return this.current.ctx;
  }

  /** A JSON error answered before any app sees the request. */
  private refuse(res: ServerResponse, status: number, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): void {
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      ...headers,
      ...(this.cors !== '' ? { 'access-control-allow-origin': this.cors } : {}),
    });
    res.end(JSON.stringify(errorBody(status, message, extra)));
  }

  /**
   * The request handler of one listener: the current version's app for `role`; for `/v/{build}/…`
   * the app of that version (static-server/versioned.ts), opened on demand while it is on disk.
   */
  handler(role: AppRole): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      if (this.closing) {
        // Requests still arriving on kept-alive connections while the server drains.
        this.refuse(res, HttpStatus.Unavailable, 'server is shutting down', {}, { connection: 'close' });
        return;
      }
      const id = takeVersionPrefix(req);
      if (id === undefined || id === this.current.version.id) return this.dispatch(this.current, role, req, res);
      const current = this.current.version.id;
      void this.olderVersion(id).then((v) => {
        if (v) return this.dispatch(v, role, req, res);
        const hint = current === undefined ? '' : `; the current version is ${current}`;
        this.refuse(res, HttpStatus.NotFound, `build version ${id} is not on this server (pruned, or never built)${hint}`, current === undefined ? {} : { current });
      });
    };
  }

  /** Route a request to a version's app, counting it in flight until its answer is done. */
  private dispatch(v: Served, role: AppRole, req: IncomingMessage, res: ServerResponse): void {
    v.inflight++;
    res.once('close', () => {
      v.inflight--;
      if (v.inflight === 0) for (const w of v.waiters.splice(0)) w();
    });
    v.apps.get(role)!.routing(req, res);
  }

  /** An older version still on disk, opened once (at most OLDER_VERSIONS_OPEN stay open); undefined when it is not there. */
  private olderVersion(id: string): Promise<Served | undefined> {
    let p = this.older.get(id);
    if (p) return p;
    p = this.open({ id, path: versionPath(id) }).then(
      (opened): Served => {
        // Opening a version names it in tilebake_build_info: the current one is still the one served.
        serverMetrics().serving(this.current.ctx.manifest, this.current.version.id);
        return { ...opened, inflight: 0, waiters: [] };
      },
      () => {
        this.older.delete(id);
        return undefined;
      },
    );
    this.older.set(id, p);
    if (this.older.size > OLDER_VERSIONS_OPEN) {
      const [oldestId, oldest] = this.older.entries().next().value!;
      this.older.delete(oldestId);
      void oldest.then((v) => v && drained(v).then(() => closeVersion(v)));
    }
    void p.then(() => this.lease());
    return p;
  }

  /**
   * Check the pointer now; switch when it names another version. Concurrent calls share one check
   * (plus one more after it, so a publish during a check is not missed). True when it switched.
   */
  check(): Promise<boolean> {
    if (this.closing) return Promise.resolve(false);
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = this.checkOnce().finally(() => {
      this.checking = undefined;
      if (this.again) {
        this.again = false;
        void this.check();
      }
    });
    return this.checking;
  }

  private async checkOnce(): Promise<boolean> {
    let next: CurrentVersion | undefined;
    try {
      next = await pollCurrentVersion(this.root, this.current.version);
    } catch (e) {
      // Once per outage (the store's own failures are logged, rate-limited, by its health tracker).
      if (!this.pointerFailing) this.log.warn({ error: (e as Error).message }, 'cannot read the build pointer; still serving the current version');
      this.pointerFailing = true;
      return false;
    }
    this.pointerFailing = false;
    if (!next || this.closing) return false;
    let opened: OpenedVersion;
    try {
      await this.lease(next);
      opened = await this.open(next);
    } catch (e) {
      this.log.error({ error: (e as Error).message, build: next.id }, 'cannot open the new build version; still serving the current one');
      await this.lease();
      return false;
    }
    if (this.closing) {
      await closeVersion(opened);
      return false;
    }
    const old = this.current;
    this.current = { ...opened, inflight: 0, waiters: [] };
    this.log.info({ build: next.id, previous: old.version.id }, 'serving build version');
    void this.retire(old);
    return true;
  }

  /** Wait for a version's requests to finish, then close it. */
  private async retire(v: Served): Promise<void> {
    this.retired.add(v);
    await (v.closed = drained(v).then(() => closeVersion(v)));
    this.retired.delete(v);
    await this.lease();
  }

  /** Update this process's lease (local folders) to the versions it holds open. */
  private async lease(extra?: CurrentVersion): Promise<void> {
    if (!(this.root instanceof LocalStore)) return;
    const ids = [this.current.version.id, ...[...this.retired].map((v) => v.version.id), ...this.older.keys(), extra?.id];
    await writeLease(this.root.location, this.closing ? [] : ids).catch((e: unknown) => this.log.warn({ error: (e as Error).message }, 'cannot write the lease file'));
  }

  /** Stop following; answer 503 to new requests; wait for running ones; close every version. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    clearTimeout(this.debounce);
    this.watcher?.close();
    await this.checking?.catch(() => undefined);
    const v = this.current;
    v.closed = drained(v).then(() => closeVersion(v));
    const older = [...this.older.values()].map((o) => o.then((x) => x && drained(x).then(() => closeVersion(x))));
    this.older.clear();
    await Promise.allSettled([v.closed, ...[...this.retired].map((r) => r.closed), ...older]);
    await this.lease();
  }
}
