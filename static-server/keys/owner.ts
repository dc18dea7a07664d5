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
import { TurnBatcher } from './batch.ts';
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
  /** Pack tiles to take from a key's quota: `{ id, key, n }`, answered with `{ id, decision }`. */
  Reserve = 'tilebake:limits-reserve',
  Reserved = 'tilebake:limits-reserved',
}
/** How long a worker waits for the primary before deciding with its own local limits. */
const ANSWER_TIMEOUT_MS = 2000;

/**
 * A worker's batch of takes (IpcLimiter): its number, the keys once, then per request [key index, 1 for
 * /height]. One message each way for many requests instead of one per request; the primary decides
 * them in order, exactly as if they had come one by one.
 */
interface TakeBatch {
  type: Msg.Take;
  batch: number;
  keys: LimitedKey[];
  takes: [number, 0 | 1][];
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
  cluster.on('message', (worker, m: { type?: string; id?: number; key?: LimitedKey; n?: number; rows?: UsageRow[]; up?: boolean; batch?: number; keys?: TakeBatch['keys']; takes?: TakeBatch['takes'] }) => {
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
    } else if (m?.type === Msg.Reserve) {
      const decision = local.decideReserve(m.key!, m.n!);
      if (worker.isConnected()) worker.send({ type: Msg.Reserved, id: m.id, decision });
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

/**
 * In a cluster worker: limits decided by the primary in batches, one batch in flight at a time
 * (TurnBatcher: the takes of one event-loop turn go at once when none is in flight, else as the next
 * batch; the busier the worker, the larger the batches). When the primary does not answer within
 * ANSWER_TIMEOUT_MS, the batch in flight and the takes that waited behind it are decided locally.
 */
export class IpcLimiter implements Limiter {
  private nextBatch = 0;
  /** The batch in flight's answer handler, by batch number. */
  private readonly answers = new Map<number, (runs: AnswerBatch['runs']) => void>();
  /** The primary missed its deadline: the next batch (the takes that waited) is decided locally. */
  private late = false;
  private readonly batcher = new TurnBatcher((takes) => this.send(takes));
  private last: LimitsStatus = { backend: 'local' };
  /** Reservations waiting for the primary, by id. */
  private readonly reserved = new Map<number, (d: LimitDecision) => void>();
  private nextReserve = 0;
  private readonly onMessage = (m: { type?: string; status?: LimitsStatus; batch?: number; runs?: AnswerBatch['runs']; id?: number; decision?: LimitDecision }) => {
    if (m?.type === Msg.Reserved) {
      const answer = this.reserved.get(m.id!);
      this.reserved.delete(m.id!);
      answer?.(m.decision!);
    } else if (m?.type === Msg.Answer) {
      // An answer after the timeout finds no handler: its takes were decided locally.
      const answer = this.answers.get(m.batch!);
      this.answers.delete(m.batch!);
      answer?.(m.runs!);
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
    return this.batcher.take(key, height);
  }

  takeMany(takes: readonly Take[]): Promise<LimitDecision[]> {
    return Promise.all(takes.map((t) => this.take(t.key, t.height)));
  }

  /** One batch to the primary; its decisions replayed from the state it answers with (decideRun). */
  private send(takes: readonly Take[]): Promise<LimitDecision[]> {
    const locally = () => takes.map((t) => this.fallback.decide(t.key, t.height));
    // The primary is gone (the server is stopping), or it was late for the batch before this one.
    if (!process.connected || this.late) {
      this.late = false;
      return Promise.resolve(locally());
    }
    const keys: LimitedKey[] = [];
    const index = new Map<LimitedKey, number>();
    const wire: TakeBatch['takes'] = takes.map((t) => {
      let k = index.get(t.key);
      if (k === undefined) {
        index.set(t.key, (k = keys.length));
        keys.push({ name: t.key.name, rate: t.key.rate, quota: t.key.quota });
      }
      return [k, t.height ? 1 : 0];
    });
    const batch = this.nextBatch++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.answers.delete(batch);
        this.late = true;
        resolve(locally());
      }, ANSWER_TIMEOUT_MS);
      this.answers.set(batch, (runs) => {
        clearTimeout(timer);
        // One state per key, taken from in the batch's order.
        const states = runs.map(([now, tokens, requests, heightPoints]) => ({ now, state: { tokens, requests, heightPoints } }));
        resolve(takes.map((t, i) => decideRun(t.key, states[wire[i][0]].state, t.height, states[wire[i][0]].now)));
      });
      process.send!({ type: Msg.Take, batch, keys, takes: wire } satisfies TakeBatch);
    });
  }

  points(key: LimitedKey, n: number): void {
    process.send?.({ type: Msg.Points, key: { name: key.name, rate: key.rate, quota: key.quota }, n });
  }

  /** Pack tiles taken by the primary (one budget for all workers); locally when it does not answer in time. */
  reserve(key: LimitedKey, n: number): Promise<LimitDecision> {
    if (!process.connected) return Promise.resolve(this.fallback.decideReserve(key, n));
    const id = this.nextReserve++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.reserved.delete(id);
        resolve(this.fallback.decideReserve(key, n));
      }, ANSWER_TIMEOUT_MS);
      this.reserved.set(id, (d) => {
        clearTimeout(timer);
        resolve(d);
      });
      process.send!({ type: Msg.Reserve, id, key: { name: key.name, rate: key.rate, quota: key.quota }, n });
    });
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
