/**
 * Limits shared by any number of servers through Redis (`--limits redis://…`): one Lua script takes
 * from the key's token bucket and checks its quotas atomically, with Redis's clock. Each serving
 * process (each cluster worker) has its own connection. When Redis does not answer, the server keeps
 * serving with its local limits, says so once in the log and in /health, and goes back to Redis once
 * it answers again.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { TurnBatcher } from './batch.ts';
import { decideOn, packTilesVerdict, periodOf, quotasOf, type LimitDecision, type LimitedKey, type Limiter, type LimitsStatus, type LimitState, type LocalLimiter, type Take } from './limits.ts';

/** Prefix of every Redis key tilebake writes. */
const PREFIX = 'tilebake:';
/** How long one command may take before local limits answer instead. */
const COMMAND_TIMEOUT_MS = 500;
/** How long the first connection may take at start-up. */
const CONNECT_TIMEOUT_MS = 2000;
/** Reconnect back-off ceiling. */
const MAX_RETRY_DELAY_MS = 2000;

/**
 * KEYS[1]: the bucket hash; KEYS[2..]: quota counters. ARGV: perSecond, burst (0: no rate), n (requests
 * taken one after the other), then per quota: limit, cost, ttl seconds. Returns {allowed of the n,
 * tokens before (exact), used before…}; the caller replays the n decisions from those (decideOn).
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1]); local burst = tonumber(ARGV[2]); local n = tonumber(ARGV[3])
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tokens = 0
if rate > 0 then
  local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
  tokens = tonumber(b[1]); local at = tonumber(b[2])
  if tokens == nil or at == nil then tokens = burst; at = now end
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
end
local before = {}; local used = {}
for i = 2, #KEYS do
  before[i - 1] = tonumber(redis.call('GET', KEYS[i]) or '0')
  used[i - 1] = before[i - 1]
end
local left = tokens; local allowed = 0
for r = 1, n do
  local ok = not (rate > 0 and left < 1)
  for i = 2, #KEYS do
    if used[i - 1] + 1 > tonumber(ARGV[3 * i - 2]) then ok = false end
  end
  if not ok then break end
  allowed = allowed + 1
  left = left - 1
  for i = 2, #KEYS do used[i - 1] = used[i - 1] + tonumber(ARGV[3 * i - 1]) end
end
if allowed > 0 then
  for i = 2, #KEYS do
    if used[i - 1] > before[i - 1] then redis.call('INCRBY', KEYS[i], used[i - 1] - before[i - 1]) end
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[3 * i]))
  end
end
if rate > 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(left), 'at', tostring(now))
  redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
end
return {allowed, string.format('%.17g', tokens), unpack(before)}
`;

type TakeCommand = (...args: (string | number)[]) => Promise<[number, string, ...number[]]>;

/**
 * KEYS[1]: a pack-tile quota counter; ARGV: limit, n, ttl seconds. Adds n when all of it fits; returns
 * {1 if added, the count before}.
 */
const RESERVE_SCRIPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local limit = tonumber(ARGV[1]); local n = tonumber(ARGV[2])
if used + n > limit then return {0, used} end
redis.call('INCRBY', KEYS[1], n)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, used}
`;

type ReserveCommand = (...args: (string | number)[]) => Promise<[number, number]>;

/** A redis:// URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'redis (unparseable URL)';
  }
}

/**
 * Whether Redis answers, for a whole server: each source (the only process, or each cluster worker,
 * which has its own connection) reports its view; Redis is unreachable while any source says so. A
 * change of the whole is said once in the log and given to `onStatus` (/health of every worker).
 */
export class RedisStatus {
  private readonly views = new Map<number, boolean>();
  private saidDown = false;

  constructor(
    private readonly log: Logger,
    private readonly where: string,
    private readonly onStatus: (s: LimitsStatus) => void = () => undefined,
  ) {}

  /** `source`'s view (undefined: the source is gone). */
  set(source: number, up: boolean | undefined): void {
    const before = this.status().redis;
    if (up === undefined) this.views.delete(source);
    else this.views.set(source, up);
    const now = this.status().redis;
    if (now === 'unreachable' && !this.saidDown) {
      this.saidDown = true;
      this.log.warn({ limits: this.where }, 'Redis is unreachable: serving with local limits until it answers');
    } else if (now === 'ok' && this.saidDown) {
      this.saidDown = false;
      this.log.info({ limits: this.where }, 'Redis answers again: limits are shared again');
    }
    if (now !== before || up !== undefined) this.onStatus(this.status());
  }

  status(): LimitsStatus {
    return { backend: 'redis', redis: [...this.views.values()].every(Boolean) ? 'ok' : 'unreachable' };
  }
}

/**
 * Limits in Redis, with `fallback` answering while Redis is unreachable: the server's local limits
 * (the only process's own, or the cluster primary's over IPC for a worker, so the budget stays exact
 * per server). Single takes are batched per event-loop turn (TurnBatcher): one script call per key
 * and kind of request in a batch.
 */
export class RedisLimiter implements Limiter {
  private up: boolean | undefined;
  private closed = false;
  private readonly batcher = new TurnBatcher((takes) => this.takeMany(takes));

  private constructor(
    private readonly redis: Redis,
    private readonly fallback: Limiter,
    private readonly onChange: (up: boolean) => void,
    private readonly statusOf: (own: boolean) => LimitsStatus,
  ) {}

  /**
   * Connect (waiting up to 2 s; afterwards it keeps trying in the background). `onChange` hears each
   * change of whether Redis answers (the first included); `statusOf` makes /health's status from it.
   */
  static async connect(
    url: string,
    fallback: Limiter,
    onChange: (up: boolean) => void,
    statusOf: (own: boolean) => LimitsStatus = (own) => ({ backend: 'redis', redis: own ? 'ok' : 'unreachable' }),
  ): Promise<RedisLimiter> {
    const redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      retryStrategy: (n) => Math.min(n * 200, MAX_RETRY_DELAY_MS),
      // The script calls of one batch go out in one write.
      enableAutoPipelining: true,
    });
    redis.defineCommand('tilebakeTake', { lua: TAKE_SCRIPT });
    redis.defineCommand('tilebakeReserve', { numberOfKeys: 1, lua: RESERVE_SCRIPT });
    const l = new RedisLimiter(redis, fallback, onChange, statusOf);
    redis.on('ready', () => l.mark(true));
    redis.on('error', () => l.mark(false));
    redis.on('close', () => l.mark(false));
    redis.on('end', () => l.mark(false));
    await redis.connect().catch(() => l.mark(false));
    return l;
  }

  /** The only process's limiter: logs and /health from its own view. */
  static async alone(url: string, local: LocalLimiter, log: Logger, onStatus?: (s: LimitsStatus) => void): Promise<RedisLimiter> {
    const status = new RedisStatus(log, redactedUrl(url), onStatus);
    return RedisLimiter.connect(url, local, (up) => status.set(0, up));
  }

  /** Note whether Redis answers; tell `onChange` once per change. */
  private mark(up: boolean): void {
    // Closing closes the connection: not an outage to report.
    if (up === this.up || this.closed) return;
    this.up = up;
    this.onChange(up);
  }

  take(key: LimitedKey, height: boolean): Promise<LimitDecision> {
    return this.batcher.take(key, height);
  }

  /** One script call per key (and kind of request) in `takes`, sent together (auto-pipelined). */
  takeMany(takes: readonly Take[]): Promise<LimitDecision[]> {
    if (!this.up) return this.fallback.takeMany(takes);
    const groups = new Map<LimitedKey, [number[], number[]]>();
    takes.forEach((t, i) => {
      let g = groups.get(t.key);
      if (!g) groups.set(t.key, (g = [[], []]));
      g[t.height ? 1 : 0].push(i);
    });
    const out: LimitDecision[] = new Array(takes.length);
    const calls: Promise<void>[] = [];
    for (const [key, byKind] of groups) {
      byKind.forEach((indexes, height) => {
        if (indexes.length === 0) return;
        calls.push(
          this.takeN(key, height === 1, indexes.length).then((ds) => {
            indexes.forEach((at, j) => (out[at] = ds[j]));
          }),
        );
      });
    }
    return Promise.all(calls).then(() => out);
  }

  /** `n` requests of `key` taken in one script call (local limits when Redis fails). */
  private async takeN(key: LimitedKey, height: boolean, n: number): Promise<LimitDecision[]> {
    const now = Date.now();
    const quotas = quotasOf(key, height);
    const keys = [`${PREFIX}bucket:${key.name}`];
    const args: (string | number)[] = [key.rate?.perSecond ?? 0, key.rate?.burst ?? 0, n];
    for (const q of quotas) {
      const p = periodOf(key.quota!.per, now);
      keys.push(`${PREFIX}quota:${key.name}:${q.kind}:${p.day}`);
      args.push(q.limit, q.cost, Math.ceil((p.end - now) / 1000) + 86_400);
    }
    let r: [number, string, ...number[]];
    try {
      r = await (this.redis as unknown as { tilebakeTake: TakeCommand }).tilebakeTake(keys.length, ...keys, ...args);
    } catch {
      this.mark(false);
      return this.fallback.takeMany(Array.from({ length: n }, () => ({ key, height })));
    }
    const state: LimitState = { tokens: Number(r[1]), used: quotas.map((_, i) => Number(r[2 + i])) };
    return Array.from({ length: n }, () => decideOn(key, quotas, state, now));
  }

  points(key: LimitedKey, n: number): void {
    if (key.quota?.heightPoints === undefined) return;
    if (!this.up) return this.fallback.points(key, n);
    const p = periodOf(key.quota.per, Date.now());
    const k = `${PREFIX}quota:${key.name}:heightPoints:${p.day}`;
    this.redis
      .multi()
      .incrby(k, n)
      .expire(k, Math.ceil((p.end - Date.now()) / 1000) + 86_400)
      .exec()
      .catch(() => {
        this.mark(false);
        this.fallback.points(key, n);
      });
  }

  async reserve(key: LimitedKey, n: number): Promise<LimitDecision> {
    const q = key.quota;
    if (q?.packTiles === undefined || !this.up) return this.fallback.reserve(key, n);
    const now = Date.now();
    const p = periodOf(q.per, now);
    try {
      const [, used] = await (this.redis as unknown as { tilebakeReserve: ReserveCommand }).tilebakeReserve(
        `${PREFIX}quota:${key.name}:packTiles:${p.day}`,
        q.packTiles,
        n,
        Math.ceil((p.end - now) / 1000) + 86_400,
      );
      return packTilesVerdict(q.packTiles, q.per, Number(used), n, now);
    } catch {
      this.mark(false);
      return this.fallback.reserve(key, n);
    }
  }

  status(): LimitsStatus {
    return this.statusOf(this.up === true);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.redis.disconnect();
    await this.fallback.close();
  }
}
