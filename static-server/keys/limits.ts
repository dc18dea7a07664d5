/**
 * Rate limits (token bucket) and quotas (requests, /height points or pack tiles per UTC day or month) per key.
 * One process decides for a whole server (the cluster primary, or the only process), so every worker
 * sees one budget; `--limits redis://…` moves the decision to Redis, shared by every server
 * (keys/redis-limits.ts). This file holds the rules and the in-memory implementation, whose quota
 * counts start from the usage store (keys/usage-store.ts) so they survive restarts.
 */
import type { Key, QuotaRule, RateRule } from './keys-file.ts';

/** What a limiter needs of a key (it crosses process boundaries). */
export type LimitedKey = Pick<Key, 'name' | 'rate' | 'quota'>;

/** The answer for one request. */
export interface LimitDecision {
  allowed: boolean;
  /** The most constraining rule: its size, what is left, seconds until it is full again / renewed. */
  limit: number;
  remaining: number;
  resetS: number;
  /** Seconds to wait before retrying (refused requests). */
  retryAfterS: number;
  /** Which rule refused, for the error message. */
  reason: string;
}

/** How limits are decided right now (for /health). */
export interface LimitsStatus {
  backend: 'local' | 'redis';
  /** With Redis: whether it answers (when not, local limits are used). */
  redis?: 'ok' | 'unreachable';
}

/** One request to take from a key's limits. */
export interface Take {
  key: LimitedKey;
  height: boolean;
}

/** Decides limits for keys. */
export interface Limiter {
  /** Take one request from the key's rate and quota; `height` also checks its height-point quota. */
  take(key: LimitedKey, height: boolean): Promise<LimitDecision>;
  /** Take several requests, decided one after the other in this order (a cluster worker's batch). */
  takeMany(takes: readonly Take[]): Promise<LimitDecision[]>;
  /** Count /height points answered for the key (against its height-point quota). */
  points(key: LimitedKey, n: number): void;
  /**
   * Take `n` pack tiles from the key's pack-tile quota if they all fit in what is left (a pack is
   * refused whole before anything is sent, never cut short); the decision names what is left.
   */
  reserve(key: LimitedKey, n: number): Promise<LimitDecision>;
  status(): LimitsStatus;
  close(): Promise<void>;
}

/** The quota kinds. */
export type QuotaKind = 'requests' | 'heightPoints' | 'packTiles';

/** How a quota kind is said in messages. */
const QUOTA_UNITS: Readonly<Record<QuotaKind, string>> = { requests: 'requests', heightPoints: '/height points', packTiles: 'pack tiles' };

/** Start and end (ms) of the UTC period containing `now`. */
export function periodOf(per: QuotaRule['per'], now: number): { start: number; end: number; day: string } {
  const d = new Date(now);
  const start = per === 'day' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = per === 'day' ? start + 86_400_000 : Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { start, end, day: new Date(start).toISOString().slice(0, 10) };
}

/** One rule's verdict (the decision when it is the only rule). */
type Verdict = LimitDecision;

/** A token bucket's verdict for `tokens` left (before taking) at `rate`. */
export function bucketVerdict(rate: RateRule, tokens: number): Verdict {
  const allowed = tokens >= 1;
  const left = allowed ? tokens - 1 : tokens;
  return {
    allowed,
    limit: rate.burst,
    remaining: left,
    resetS: (rate.burst - left) / rate.perSecond,
    retryAfterS: allowed ? 0 : (1 - tokens) / rate.perSecond,
    reason: `rate limit of ${rate.perSecond}/s (burst ${rate.burst}) exceeded`,
  };
}

/** A quota's verdict for `used` before this request (`cost` 1 for requests; points are counted afterwards). */
export function quotaVerdict(kind: QuotaKind, limit: number, per: QuotaRule['per'], used: number, cost: number, now: number): Verdict {
  const allowed = used + 1 <= limit;
  const resetS = (periodOf(per, now).end - now) / 1000;
  return {
    allowed,
    limit,
    remaining: limit - used - (allowed ? cost : 0),
    resetS,
    retryAfterS: allowed ? 0 : resetS,
    reason: `quota of ${limit} ${QUOTA_UNITS[kind]} per ${per} used up`,
  };
}

/**
 * A pack-tile quota's verdict for `n` tiles with `used` counted before: allowed when all `n` fit. A
 * refusal says how many are left; waiting helps only when the pack fits in a whole period.
 */
export function packTilesVerdict(limit: number, per: QuotaRule['per'], used: number, n: number, now: number): LimitDecision {
  const allowed = used + n <= limit;
  const resetS = (periodOf(per, now).end - now) / 1000;
  const left = Math.max(0, limit - used);
  return {
    allowed,
    limit,
    remaining: allowed ? limit - used - n : left,
    resetS,
    retryAfterS: allowed ? 0 : resetS,
    reason: `a pack of ${n} tiles is more than the ${left} left of its quota of ${limit} ${QUOTA_UNITS.packTiles} per ${per}`,
  };
}

/** One decision from the verdicts: refused when any refuses (the longest wait), else the tightest rule. */
export function combine(verdicts: Verdict[]): LimitDecision {
  const refused = verdicts.filter((v) => !v.allowed);
  if (refused.length > 0) return refused.reduce((a, b) => (b.retryAfterS > a.retryAfterS ? b : a));
  return verdicts.reduce((a, b) => (b.remaining / b.limit < a.remaining / a.limit ? b : a));
}

/** The quota rules that apply to a request. */
export function quotasOf(key: LimitedKey, height: boolean): { kind: 'requests' | 'heightPoints'; limit: number; cost: number }[] {
  const q = key.quota;
  if (!q) return [];
  const out: { kind: 'requests' | 'heightPoints'; limit: number; cost: number }[] = [];
  if (q.requests !== undefined) out.push({ kind: 'requests', limit: q.requests, cost: 1 });
  if (height && q.heightPoints !== undefined) out.push({ kind: 'heightPoints', limit: q.heightPoints, cost: 0 });
  return out;
}

/** What one key's limits hold: tokens in its bucket (when it has a rate) and the count of each quota that applies. */
export interface LimitState {
  tokens: number;
  used: number[];
}

/**
 * Decide one request of `key` on `state` (the rules: a rate's bucket, then `quotas` as quotasOf gives
 * them); an allowed request takes a token and adds each quota's cost. Used by the local limiter on its
 * own state, and to replay the requests a Redis script took at once (keys/redis-limits.ts).
 */
export function decideOn(key: LimitedKey, quotas: readonly { kind: QuotaKind; limit: number; cost: number }[], state: LimitState, now: number): LimitDecision {
  const verdicts: Verdict[] = [];
  if (key.rate) verdicts.push(bucketVerdict(key.rate, state.tokens));
  quotas.forEach((q, i) => verdicts.push(quotaVerdict(q.kind, q.limit, key.quota!.per, state.used[i], q.cost, now)));
  const d = combine(verdicts);
  if (d.allowed) {
    state.tokens -= 1;
    quotas.forEach((q, i) => (state.used[i] += q.cost));
  }
  return d;
}

/** A key's state as a run of takes sees it: tokens, and the count of each per-request quota kind (0 when the key has none). */
export type RunState = { tokens: number } & Record<'requests' | 'heightPoints', number>;

/**
 * Decide one request of `key` on `state` (updated), as decideOn does with the quotas of its kind. A
 * run of takes replayed from the state before it gives the decisions its owner made (the cluster
 * primary sends a worker this state per key instead of a decision per request).
 */
export function decideRun(key: LimitedKey, state: RunState, height: boolean, now: number): LimitDecision {
  const quotas = quotasOf(key, height);
  const s: LimitState = { tokens: state.tokens, used: quotas.map((q) => state[q.kind]) };
  const d = decideOn(key, quotas, s, now);
  state.tokens = s.tokens;
  quotas.forEach((q, i) => (state[q.kind] = s.used[i]));
  return d;
}

/** Where quota counts of earlier runs come from (the usage store). */
export interface QuotaHistory {
  /** Requests or points of `key` on days from `sinceDay` (YYYY-MM-DD) on. */
  usedSince(key: string, kind: QuotaKind, sinceDay: string): number;
}

/** Limits decided in this process's memory. */
export class LocalLimiter implements Limiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly history?: QuotaHistory,
    private readonly now: () => number = Date.now,
  ) {}

  /** Tokens in `key`'s bucket now (refilled since the last take). */
  private bucket(key: LimitedKey & { rate: RateRule }, now: number): { tokens: number; at: number } {
    let b = this.buckets.get(key.name);
    if (!b) {
      b = { tokens: key.rate.burst, at: now };
      this.buckets.set(key.name, b);
    }
    b.tokens = Math.min(key.rate.burst, b.tokens + ((now - b.at) / 1000) * key.rate.perSecond);
    b.at = now;
    return b;
  }

  /** The counter of a quota in the current period (seeded from the history on first use). */
  private counter(name: string, kind: QuotaKind, per: QuotaRule['per'], now: number): string {
    const slot = `${name}\n${kind}\n${periodOf(per, now).start}`;
    if (!this.counts.has(slot)) this.counts.set(slot, this.history?.usedSince(name, kind, periodOf(per, now).day) ?? 0);
    return slot;
  }

  /** Synchronous `take`. */
  decide(key: LimitedKey, height: boolean): LimitDecision {
    let d!: LimitDecision;
    this.takeRun(key, [height], (x) => (d = x));
    return d;
  }

  /**
   * Take requests of `key` one after the other (`heights`: which are /height requests); `each` hears
   * their decisions. Returns the state before them and the time they were decided at (for decideRun).
   */
  takeRun(key: LimitedKey, heights: readonly boolean[], each: (d: LimitDecision) => void = () => undefined): { before: RunState; now: number } {
    const now = this.now();
    const b = key.rate ? this.bucket(key as LimitedKey & { rate: RateRule }, now) : undefined;
    const q = key.quota;
    const rs = q?.requests !== undefined ? this.counter(key.name, 'requests', q.per, now) : undefined;
    const hs = q?.heightPoints !== undefined && heights.includes(true) ? this.counter(key.name, 'heightPoints', q.per, now) : undefined;
    const before: RunState = { tokens: b?.tokens ?? 0, requests: rs ? this.counts.get(rs)! : 0, heightPoints: hs ? this.counts.get(hs)! : 0 };
    const state = { ...before };
    for (const h of heights) each(decideRun(key, state, h, now));
    if (b) b.tokens = state.tokens;
    if (rs) this.counts.set(rs, state.requests);
    if (hs) this.counts.set(hs, state.heightPoints);
    return { before, now };
  }

  take(key: LimitedKey, height: boolean): Promise<LimitDecision> {
    return Promise.resolve(this.decide(key, height));
  }

  takeMany(takes: readonly Take[]): Promise<LimitDecision[]> {
    return Promise.resolve(takes.map((t) => this.decide(t.key, t.height)));
  }

  points(key: LimitedKey, n: number): void {
    if (key.quota?.heightPoints === undefined) return;
    const slot = this.counter(key.name, 'heightPoints', key.quota.per, this.now());
    this.counts.set(slot, this.counts.get(slot)! + n);
  }

  /** Synchronous `reserve`. */
  decideReserve(key: LimitedKey, n: number): LimitDecision {
    const q = key.quota;
    const now = this.now();
    if (q?.packTiles === undefined) return packTilesVerdict(Infinity, 'day', 0, n, now);
    const slot = this.counter(key.name, 'packTiles', q.per, now);
    const d = packTilesVerdict(q.packTiles, q.per, this.counts.get(slot)!, n, now);
    if (d.allowed) this.counts.set(slot, this.counts.get(slot)! + n);
    return d;
  }

  reserve(key: LimitedKey, n: number): Promise<LimitDecision> {
    return Promise.resolve(this.decideReserve(key, n));
  }

  status(): LimitsStatus {
    return { backend: 'local' };
  }

  async close(): Promise<void> {}
}
