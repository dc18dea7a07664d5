/**
 * Limits shared by any number of servers through Redis (`--limits redis://…`): one Lua script takes
 * from the key's token bucket and checks its quotas atomically, with Redis's clock. When Redis does
 * not answer, the server keeps serving with its local limits, says so once in the log and in
 * /health, and goes back to Redis once it answers again.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bucketVerdict, combine, periodOf, quotasOf, quotaVerdict, type LimitDecision, type LimitedKey, type Limiter, type LimitsStatus, type LocalLimiter } from './limits.ts';

/** Prefix of every Redis key tilebake writes. */
const PREFIX = 'tilebake:';
/** How long one command may take before local limits answer instead. */
const COMMAND_TIMEOUT_MS = 500;
/** How long the first connection may take at start-up. */
const CONNECT_TIMEOUT_MS = 2000;
/** Reconnect back-off ceiling. */
const MAX_RETRY_DELAY_MS = 2000;

/**
 * KEYS[1]: the bucket hash; KEYS[2..]: quota counters. ARGV: perSecond, burst (0: no rate), then per
 * quota: limit, cost, ttl seconds. Returns {allowed, tokens before, used before…}.
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1]); local burst = tonumber(ARGV[2])
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local ok = 1; local tokens = 0
if rate > 0 then
  local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
  tokens = tonumber(b[1]); local at = tonumber(b[2])
  if tokens == nil or at == nil then tokens = burst; at = now end
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
  if tokens < 1 then ok = 0 end
end
local out = {}
for i = 2, #KEYS do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0')
  out[i - 1] = used
  if used + 1 > tonumber(ARGV[3 * i - 3]) then ok = 0 end
end
if ok == 1 then
  for i = 2, #KEYS do
    local cost = tonumber(ARGV[3 * i - 2])
    if cost > 0 then redis.call('INCRBY', KEYS[i], cost) end
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[3 * i - 1]))
  end
end
if rate > 0 then
  local left = tokens
  if ok == 1 then left = tokens - 1 end
  redis.call('HSET', KEYS[1], 'tokens', tostring(left), 'at', tostring(now))
  redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
end
return {ok, tostring(tokens), unpack(out)}
`;

type TakeCommand = (...args: (string | number)[]) => Promise<[number, string, ...number[]]>;

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

/** Limits in Redis, with `local` answering while Redis is unreachable. */
export class RedisLimiter implements Limiter {
  private up = false;
  private saidDown = false;

  private constructor(
    private readonly redis: Redis,
    private readonly local: LocalLimiter,
    private readonly log: Logger,
    private readonly where: string,
    private readonly onStatus: (s: LimitsStatus) => void,
  ) {}

  /** Connect (waiting up to 2 s; afterwards it keeps trying in the background). */
  static async connect(url: string, local: LocalLimiter, log: Logger, onStatus: (s: LimitsStatus) => void = () => undefined): Promise<RedisLimiter> {
    const redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      retryStrategy: (n) => Math.min(n * 200, MAX_RETRY_DELAY_MS),
    });
    redis.defineCommand('tilebakeTake', { lua: TAKE_SCRIPT });
    const l = new RedisLimiter(redis, local, log, redactedUrl(url), onStatus);
    redis.on('ready', () => l.mark(true));
    redis.on('error', () => l.mark(false));
    redis.on('end', () => l.mark(false));
    await redis.connect().catch(() => l.mark(false));
    return l;
  }

  /** Note whether Redis answers; say so once per change. */
  private mark(up: boolean): void {
    if (up === this.up && (up || this.saidDown)) return;
    this.up = up;
    if (up) {
      if (this.saidDown) this.log.info({ limits: this.where }, 'Redis answers again: limits are shared again');
      this.saidDown = false;
    } else {
      this.saidDown = true;
      this.log.warn({ limits: this.where }, 'Redis is unreachable: serving with local limits until it answers');
    }
    this.onStatus(this.status());
  }

  async take(key: LimitedKey, height: boolean): Promise<LimitDecision> {
    if (!this.up) return this.local.decide(key, height);
    const now = Date.now();
    const quotas = quotasOf(key, height);
    const keys = [`${PREFIX}bucket:${key.name}`];
    const args: (string | number)[] = [key.rate?.perSecond ?? 0, key.rate?.burst ?? 0];
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
      return this.local.decide(key, height);
    }
    const verdicts = [];
    if (key.rate) verdicts.push(bucketVerdict(key.rate, Number(r[1])));
    quotas.forEach((q, i) => verdicts.push(quotaVerdict(q.kind, q.limit, key.quota!.per, Number(r[2 + i]), q.cost, now)));
    return combine(verdicts);
  }

  points(key: LimitedKey, n: number): void {
    if (key.quota?.heightPoints === undefined) return;
    if (!this.up) return this.local.points(key, n);
    const p = periodOf(key.quota.per, Date.now());
    const k = `${PREFIX}quota:${key.name}:heightPoints:${p.day}`;
    this.redis
      .multi()
      .incrby(k, n)
      .expire(k, Math.ceil((p.end - Date.now()) / 1000) + 86_400)
      .exec()
      .catch(() => {
        this.mark(false);
        this.local.points(key, n);
      });
  }

  status(): LimitsStatus {
    return { backend: 'redis', redis: this.up ? 'ok' : 'unreachable' };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
