/**
 * The one place per server that decides limits and writes usage: the cluster primary, or the only
 * process with `--workers 1`. Workers ask it over IPC (IpcLimiter); their usage rows go the same way.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { LocalLimiter, type LimitDecision, type LimitedKey, type Limiter, type LimitsStatus } from './limits.ts';
import { RedisLimiter } from './redis-limits.ts';
import { UsageStore, type UsageRow } from './usage-store.ts';

/** IPC messages of the limits. */
const enum Msg {
  Take = 'tilebake:limits-take',
  Answer = 'tilebake:limits-answer',
  Points = 'tilebake:limits-points',
  Usage = 'tilebake:usage',
  Status = 'tilebake:limits-status',
}
/** How long a worker waits for the primary before deciding with its own local limits. */
const ANSWER_TIMEOUT_MS = 2000;

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
export async function startLimitsOwner(opts: OwnerOptions, log: Logger, onStatus?: (s: LimitsStatus) => void): Promise<LimitsOwner> {
  const usage = new UsageStore(opts.stateDir);
  const local = new LocalLimiter(usage);
  const limiter: Limiter = opts.limits ? await RedisLimiter.connect(opts.limits, local, log, onStatus) : local;
  return {
    limiter,
    usage,
    close: async () => {
      await limiter.close();
      usage.close();
    },
  };
}

/** In the cluster primary: answer workers' limit requests, store their usage, tell them the limits' status. */
export async function serveLimitsToWorkers(opts: OwnerOptions, log: Logger): Promise<LimitsOwner> {
  const tell = (w: Worker | undefined, status: LimitsStatus) => {
    if (w?.isConnected()) w.send({ type: Msg.Status, status });
  };
  const owner = await startLimitsOwner(opts, log, (s) => {
    for (const w of Object.values(cluster.workers ?? {})) tell(w, s);
  });
  cluster.on('message', (worker, m: { type?: string; id?: number; key?: LimitedKey; height?: boolean; n?: number; rows?: UsageRow[] }) => {
    if (m?.type === Msg.Take) {
      void owner.limiter.take(m.key!, m.height === true).then((decision) => {
        if (worker.isConnected()) worker.send({ type: Msg.Answer, id: m.id, decision });
      });
    } else if (m?.type === Msg.Points) {
      owner.limiter.points(m.key!, m.n!);
    } else if (m?.type === Msg.Usage) {
      owner.usage.add(m.rows!);
    } else if (m?.type === Msg.Status) {
      tell(worker, owner.limiter.status());
    }
  });
  return owner;
}

/** In a cluster worker: limits decided by the primary (a local decision if it does not answer in time). */
export class IpcLimiter implements Limiter {
  private nextId = 0;
  private readonly waiting = new Map<number, (d: LimitDecision) => void>();
  private last: LimitsStatus = { backend: 'local' };
  private readonly onMessage = (m: { type?: string; id?: number; decision?: LimitDecision; status?: LimitsStatus }) => {
    if (m?.type === Msg.Answer) {
      this.waiting.get(m.id!)?.(m.decision!);
      this.waiting.delete(m.id!);
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
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(this.fallback.decide(key, height));
      }, ANSWER_TIMEOUT_MS);
      this.waiting.set(id, (d) => {
        clearTimeout(timer);
        resolve(d);
      });
      process.send!({ type: Msg.Take, id, key: { name: key.name, rate: key.rate, quota: key.quota }, height });
    });
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
