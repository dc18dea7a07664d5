/**
 * The one place per server that decides local limits and writes usage: the cluster primary, or the
 * only process with `--workers 1`. Workers ask it over IPC (IpcLimiter); their usage rows go the same
 * way. With `--limits redis://…` each worker takes from Redis itself (RedisLimiter) and asks the
 * primary only while Redis is unreachable; the primary gathers the workers' views of Redis, to say a
 * change once per server in the log and in /health.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { decideRun, LocalLimiter, type LimitDecision, type LimitedKey, type Limiter, type LimitsStatus, type Take } from './limits.ts';
import { RedisLimiter, RedisStatus, redactedUrl } from './redis-limits.ts';
import { UsageStore, type UsageRow } from './usage-store.ts';

/** IPC messages of the limits. */
const enum Msg {
  Take = 'tilebake:limits-take',
  Answer = 'tilebake:limits-answer',
  Points = 'tilebake:limits-points',
  Usage = 'tilebake:usage',
  Status = 'tilebake:limits-status',
  /** A worker's view of Redis: `{ up }`. */
  Redis = 'tilebake:limits-redis',
}
/** How long a worker waits for the primary before deciding with its own local limits. */
const ANSWER_TIMEOUT_MS = 2000;

/**
 * A worker's batch of takes (IpcLimiter): its number, the keys once, then per request [key index, 1 for
 * /height, id]. One message each way for many requests instead of one per request; the primary decides
 * them in order, exactly as if they had come one by one.
 */
interface TakeBatch {
  type: Msg.Take;
  batch: number;
  keys: LimitedKey[];
  takes: [number, 0 | 1, number][];
}
/**
 * The primary's answer to one batch: per key of the batch, [time decided at, tokens, requests and
 * /height points counted] before its takes; the worker replays the batch's decisions from them
 * (decideRun), as the primary made them. A few numbers per key instead of a decision per request.
 */
interface AnswerBatch {
  type: Msg.Answer;
  batch: number;
  runs: [number, number, number, number][];
}

/** What the owner needs from the options. */
export interface OwnerOptions {
  /** Folder of usage.sqlite. */
  stateDir: string;
  /** `redis://…` to share limits between servers; absent: local limits. */
  limits?: string;
}

/** The limiter and usage store of a server. */
export interface LimitsOwner {
  limiter: Limiter;
  usage: UsageStore;
  close(): Promise<void>;
}

/** Open the usage store and the limiter (local, or Redis with local fallback). */
export async function startLimitsOwner(opts: OwnerOptions, log: Logger): Promise<LimitsOwner> {
  const usage = new UsageStore(opts.stateDir);
  const local = new LocalLimiter(usage);
  const limiter: Limiter = opts.limits ? await RedisLimiter.alone(opts.limits, local, log) : local;
  return {
    limiter,
    usage,
    close: async () => {
      await limiter.close();
      usage.close();
    },
  };
}

/**
 * In the cluster primary: answer workers' limit requests (with local limits: Redis is the workers'
 * business), store their usage, tell them the limits' status.
 */
export async function serveLimitsToWorkers(opts: OwnerOptions, log: Logger): Promise<LimitsOwner> {
  const tell = (w: Worker | undefined, status: LimitsStatus) => {
    if (w?.isConnected()) w.send({ type: Msg.Status, status });
  };
  const tellAll = (s: LimitsStatus) => {
    for (const w of Object.values(cluster.workers ?? {})) tell(w, s);
  };
  const usage = new UsageStore(opts.stateDir);
  const local = new LocalLimiter(usage);
  const owner: LimitsOwner = { limiter: local, usage, close: async () => usage.close() };
  const redis = opts.limits ? new RedisStatus(log, redactedUrl(opts.limits), tellAll) : undefined;
  const status = () => redis?.status() ?? owner.limiter.status();
  if (redis) cluster.on('exit', (worker) => redis.set(worker.id, undefined));
  cluster.on('message', (worker, m: { type?: string; key?: LimitedKey; n?: number; rows?: UsageRow[]; up?: boolean; batch?: number; keys?: TakeBatch['keys']; takes?: TakeBatch['takes'] }) => {
    if (m?.type === Msg.Take) {
      const { batch, keys, takes } = m as unknown as TakeBatch;
      const heights: boolean[][] = keys.map(() => []);
      for (const [k, height] of takes) heights[k].push(height === 1);
      const runs = keys.map((key, k): AnswerBatch['runs'][number] => {
        const { before, now } = local.takeRun(key, heights[k]);
        return [now, before.tokens, before.requests, before.heightPoints];
      });
      const answer: AnswerBatch = { type: Msg.Answer, batch, runs };
      if (worker.isConnected()) worker.send(answer);
    } else if (m?.type === Msg.Points) {
      local.points(m.key!, m.n!);
    } else if (m?.type === Msg.Usage) {
      usage.add(m.rows!);
    } else if (m?.type === Msg.Status) {
      tell(worker, status());
    } else if (m?.type === Msg.Redis) {
      redis?.set(worker.id, m.up!);
    }
  });
  return owner;
}

/**
 * A cluster worker's limiter: the primary's over IPC, or with Redis its own connection to Redis,
 * falling back to the primary's local limits while Redis is unreachable. /health shows the server's
 * status (the primary's, gathered from every worker) once known, this worker's view before.
 */
export async function startWorkerLimiter(opts: OwnerOptions): Promise<Limiter> {
  const ipc = new IpcLimiter();
  if (!opts.limits) return ipc;
  return RedisLimiter.connect(
    opts.limits,
    ipc,
    (up) => {
      if (process.connected) process.send?.({ type: Msg.Redis, up });
    },
    (own) => {
      const server = ipc.status();
      return own && server.backend === 'redis' ? server : { backend: 'redis', redis: own ? 'ok' : 'unreachable' };
    },
  );
}

/** A take waiting for the primary's answer. */
interface Waiting {
  key: LimitedKey;
  height: boolean;
  resolve: (d: LimitDecision) => void;
}

/**
 * In a cluster worker: limits decided by the primary in batches, one batch in flight at a time: the
 * takes of one event-loop turn go at once when none is in flight, else they wait for its answer and
 * go as the next batch (the busier the worker, the larger the batches). When the primary does not
 * answer within ANSWER_TIMEOUT_MS, the batch in flight and the waiting takes are decided locally.
 */
export class IpcLimiter implements Limiter {
  private nextId = 0;
  private nextBatch = 0;
  private readonly waiting = new Map<number, Waiting>();
  /** Takes not sent yet. */
  private queued: number[] = [];
  private flushScheduled = false;
  /** The batch sent and not answered yet: its number, takes and timeout. */
  private inFlight: { batch: number; ids: number[]; takes: TakeBatch['takes']; timer: NodeJS.Timeout } | undefined;
  private last: LimitsStatus = { backend: 'local' };
  private readonly onMessage = (m: { type?: string; status?: LimitsStatus; batch?: number; runs?: AnswerBatch['runs'] }) => {
    if (m?.type === Msg.Answer) {
      // An answer after the timeout: its takes were decided locally.
      const f = this.inFlight;
      if (!f || f.batch !== m.batch) return;
      clearTimeout(f.timer);
      this.inFlight = undefined;
      const states = m.runs!.map(([now, tokens, requests, heightPoints]) => ({ now, state: { tokens, requests, heightPoints } }));
      for (const [k, height, id] of f.takes) {
        const w = this.waiting.get(id);
        if (!w) continue;
        this.waiting.delete(id);
        w.resolve(decideRun(w.key, states[k].state, height === 1, states[k].now));
      }
      this.flush();
    } else if (m?.type === Msg.Status) {
      this.last = m.status!;
    }
  };
  private readonly fallback = new LocalLimiter();

  constructor() {
    process.on('message', this.onMessage);
    // Ask for the current status; changes are sent as they happen.
    process.send?.({ type: Msg.Status });
  }

  take(key: LimitedKey, height: boolean): Promise<LimitDecision> {
    const id = this.nextId++;
    this.queued.push(id);
    if (!this.inFlight && !this.flushScheduled) {
      this.flushScheduled = true;
      // Once this turn's requests have been read.
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
    return new Promise((resolve) => this.waiting.set(id, { key, height, resolve }));
  }

  takeMany(takes: readonly Take[]): Promise<LimitDecision[]> {
    return Promise.all(takes.map((t) => this.take(t.key, t.height)));
  }

  /** Send the queued takes as one batch, unless one is in flight. */
  private flush(): void {
    if (this.inFlight || this.queued.length === 0) return;
    // The primary is gone (the server is stopping): decide here rather than throw.
    if (!process.connected) return this.decideLocally();
    const ids = this.queued;
    this.queued = [];
    const keys: LimitedKey[] = [];
    const index = new Map<LimitedKey, number>();
    const takes: TakeBatch['takes'] = [];
    for (const id of ids) {
      const w = this.waiting.get(id)!;
      let k = index.get(w.key);
      if (k === undefined) {
        index.set(w.key, (k = keys.length));
        keys.push({ name: w.key.name, rate: w.key.rate, quota: w.key.quota });
      }
      takes.push([k, w.height ? 1 : 0, id]);
    }
    const batch: TakeBatch = { type: Msg.Take, batch: this.nextBatch++, keys, takes };
    this.inFlight = { batch: batch.batch, ids, takes, timer: setTimeout(() => this.decideLocally(), ANSWER_TIMEOUT_MS) };
    process.send!(batch);
  }

  /** The primary did not answer in time (or is gone): decide the batch in flight and the waiting takes here. */
  private decideLocally(): void {
    const ids = [...(this.inFlight?.ids ?? []), ...this.queued];
    this.inFlight = undefined;
    this.queued = [];
    for (const id of ids) {
      const w = this.waiting.get(id);
      if (!w) continue;
      this.waiting.delete(id);
      w.resolve(this.fallback.decide(w.key, w.height));
    }
  }

  points(key: LimitedKey, n: number): void {
    process.send?.({ type: Msg.Points, key: { name: key.name, rate: key.rate, quota: key.quota }, n });
  }

  status(): LimitsStatus {
    return this.last;
  }

  async close(): Promise<void> {
    process.off('message', this.onMessage);
  }
}

/** In a cluster worker: where usage rows go (the primary). */
export function sendUsageToPrimary(rows: UsageRow[]): void {
  if (process.connected) process.send?.({ type: Msg.Usage, rows });
}
