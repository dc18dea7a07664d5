/**
 * Counting what each key uses: Prometheus counters by key name (`tilebake_requests_total{key,kind,status}`,
 * `tilebake_key_height_points_total{key}`, summed over cluster workers like every metric), and rows for
 * the usage store, batched and sent to the process that owns it (keys/owner.ts) once a second.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import { HttpStatus } from '../../lib/http-status.ts';
import { hotCounter, serverMetrics, type HotCounter, type RouteKind } from '../metrics.ts';
import type { Key } from './keys-file.ts';
import type { UsageRow } from './usage-store.ts';

/** How often batched usage rows are handed on. */
const FLUSH_MS = 1000;
/** Milliseconds in a (UTC) day. */
const DAY_MS = 86_400_000;

/** /height points of requests (set by the height route, read when the answer is done). */
const requestPoints = new WeakMap<object, number>();
/** Tiles of the pack a request answered (set by the packs route). */
const requestPackTiles = new WeakMap<object, number>();

/** Note the tiles of the pack answered for a request (called by the packs route once it sends the pack). */
export function notePackTiles(req: FastifyRequest, n: number): void {
  requestPackTiles.set(req, n);
}

/** Note the /height points answered for a request (called by the height route). */
export function notePoints(req: FastifyRequest, n: number): void {
  requestPoints.set(req, n);
}

/** The /height points noted for a request (0 for other requests). */
export function pointsOf(req: FastifyRequest): number {
  return requestPoints.get(req) ?? 0;
}

let counters: { requests: HotCounter<'key' | 'kind' | 'status'>; points: Counter<'key'> } | undefined;
/** The per-key counters, registered once in this process's registry. */
function keyCounters(): NonNullable<typeof counters> {
  const registers = [serverMetrics().registry];
  counters ??= {
    requests: hotCounter({ name: 'tilebake_requests_total', help: 'Requests answered per key name, by route kind and status', labelNames: ['key', 'kind', 'status'] as const, registers }),
    points: new Counter({ name: 'tilebake_key_height_points_total', help: '/height points answered per key name', labelNames: ['key'] as const, registers }),
  };
  return counters;
}

/** Batches usage rows per day and key and hands them to `sink` every second (and on flush). */
export class UsageRecorder {
  private pending = new Map<string, UsageRow>();
  private readonly timer: NodeJS.Timeout;
  /** Today (UTC, YYYY-MM-DD) and the time it ends, ms. */
  private day = '';
  private dayEnds = 0;

  constructor(private readonly sink: (rows: UsageRow[]) => void) {
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  /** One answered request of `key`. */
  record(key: Key, kind: RouteKind, req: FastifyRequest, reply: FastifyReply): void {
    const points = pointsOf(req);
    const packTiles = requestPackTiles.get(req) ?? 0;
    const bytes = Number(reply.getHeader('content-length')) || 0;
    const c = keyCounters();
    const status = reply.statusCode;
    c.requests.add(`${key.name}\n${kind} ${status}`, () => ({ key: key.name, kind, status }));
    if (points > 0) c.points.inc({ key: key.name }, points);
    // Refused by a limit: counted above, but not as usage (local quotas count from these rows).
    if (status === HttpStatus.TooManyRequests) return; // refused by a rate limit or quota
    const now = Date.now();
    if (now >= this.dayEnds) {
      this.day = new Date(now).toISOString().slice(0, 10);
      this.dayEnds = Date.parse(this.day) + DAY_MS;
    }
    const day = this.day;
    const slot = `${day}\n${key.name}`;
    let row = this.pending.get(slot);
    if (!row) this.pending.set(slot, (row = { day, key: key.name, requests: 0, bytes: 0, points: 0, packTiles: 0 }));
    row.requests++;
    row.bytes += bytes;
    row.points += points;
    row.packTiles += packTiles;
  }

  /** Hand on what was recorded so far. */
  flush(): void {
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    this.sink(rows);
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
