// Store reads: deadline, retries, classification; the rate-limited failure log; the health tracker.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpStore } from '../lib/storage.ts';
import {
  guardedRead,
  HttpStatusError,
  StoreBadAnswerError,
  StoreTimeoutError,
  toStoreError,
  type ReadOutcome,
  type ReadPolicy,
} from '../lib/store-read.ts';
import { FailureLog } from '../static-server/failure-log.ts';
import { FAILED_READS_TO_FAIL, StoreHealth } from '../static-server/store-health.ts';

const POLICY: ReadPolicy = { timeoutMs: 400, retries: 2, backoffMs: 10 };
/** The same retries under a deadline no busy machine reaches: for the tests of retrying, not of the deadline. */
const RETRYING: ReadPolicy = { ...POLICY, timeoutMs: 30_000 };

/** A transient failure as fetch reports a refused connection. */
function refused(): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) });
}

describe('guardedRead', () => {
  it('retries transient failures with backoff and reports one outcome', async () => {
    const outcomes: ReadOutcome[] = [];
    let calls = 0;
    const value = await guardedRead(() => 'x', RETRYING, async () => {
      if (++calls < 3) throw refused();
      return 'bytes';
    }, (o) => outcomes.push(o));
    expect(value).toBe('bytes');
    expect(calls).toBe(3);
    expect(outcomes).toEqual([expect.objectContaining({ ok: true, attempts: 3 })]);
  });

  it('gives up after the retries with a StoreBadAnswerError naming the read and the cause', async () => {
    const outcomes: ReadOutcome[] = [];
    let calls = 0;
    const err = await guardedRead(() => 'http://store/a.pmtiles bytes 0+10', RETRYING, async () => {
      calls++;
      throw refused();
    }, (o) => outcomes.push(o)).catch((e: unknown) => e);
    expect(calls).toBe(RETRYING.retries + 1);
    expect(err).toBeInstanceOf(StoreBadAnswerError);
    expect((err as StoreBadAnswerError).transient).toBe(true);
    expect((err as Error).message).toBe('http://store/a.pmtiles bytes 0+10: cannot reach the store (connect ECONNREFUSED 127.0.0.1:9)');
    expect(outcomes).toEqual([expect.objectContaining({ ok: false, error: err, attempts: 3 })]);
  });

  it('does not retry answers that will not change (404, corrupt)', async () => {
    let calls = 0;
    const err = await guardedRead(() => 'u', POLICY, async () => {
      calls++;
      throw new HttpStatusError(404, 'HTTP 404');
    }).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect((err as StoreBadAnswerError).transient).toBe(false);
    expect(toStoreError('u', new HttpStatusError(503, 'HTTP 503')).transient).toBe(true);
    expect(toStoreError('u', Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })).transient).toBe(true);
    expect(toStoreError('u', Object.assign(new Error('EISDIR: illegal operation'), { code: 'EISDIR' })).transient).toBe(false);
  });

  it('fails with StoreTimeoutError at the deadline, abandons the attempt and disposes of its late result', async () => {
    let signal: AbortSignal | undefined;
    let finish: (v: string) => void = () => undefined;
    const disposed: string[] = [];
    const p = guardedRead(() => 'slow read', POLICY, (s) => {
      signal = s;
      return new Promise<string>((r) => (finish = r));
    }, undefined, (late) => disposed.push(late));
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreTimeoutError);
    expect((err as Error).message).toBe(`slow read: no answer within ${POLICY.timeoutMs} ms`);
    expect(signal?.aborted).toBe(true);
    finish('late bytes');
    await new Promise((r) => setImmediate(r));
    expect(disposed).toEqual(['late bytes']);
  });
});

describe('HttpStore against a misbehaving server', () => {
  let server: Server;
  let base: string;
  let mode: 'hang' | 'flaky' | 'ok' = 'ok';
  let hits = 0;
  /** Sockets of the requests the server left hanging. */
  const hung: import('node:net').Socket[] = [];
  /** Generous deadline: the first fetch of a process is slow on a loaded machine. */
  const policy: ReadPolicy = { ...POLICY, timeoutMs: 2000 };

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      if (mode === 'hang') {
        hung.push(req.socket); // never answers
        return;
      }
      if (mode === 'flaky' && hits % 2 === 1) {
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":1}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('retries a 503 and reads the file', async () => {
    mode = 'flaky';
    hits = 0;
    const store = new HttpStore(base, { policy });
    expect(Buffer.from((await store.readFile('manifest.json'))!).toString()).toBe('{"version":1}');
    expect(hits).toBe(2);
  });

  it('times out a hung server and closes the request', async () => {
    mode = 'hang';
    const outcomes: ReadOutcome[] = [];
    const store = new HttpStore(base, { policy, onRead: (o) => outcomes.push(o) });
    const err = await store.readFile('manifest.json').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreTimeoutError);
    expect((err as Error).message).toContain(`${base}manifest.json: no answer within`);
    expect(outcomes.map((o) => o.error?.kind)).toEqual(['timeout']);
    // The aborted request's connection is closed (no socket left waiting on the hung server).
    expect(hung).toHaveLength(1);
    await vi.waitFor(() => expect(hung[0].destroyed).toBe(true));
  });
});

describe('FailureLog', () => {
  it('writes the first failure of a kind at once and sums up the rest once per interval', () => {
    vi.useFakeTimers();
    try {
      const lines: { obj: Record<string, unknown>; msg: string }[] = [];
      const log = { error: (obj: Record<string, unknown>, msg: string) => lines.push({ obj, msg }), info: () => undefined };
      const f = new FailureLog(log as never, 10_000);
      for (let i = 0; i < 500; i++) f.report('store timeout', `read ${i} timed out`);
      f.report('store bad-answer', 'refused');
      expect(lines.map((l) => l.msg)).toEqual(['read 0 timed out', 'refused']);
      vi.advanceTimersByTime(10_000);
      expect(lines.map((l) => l.msg)).toEqual(['read 0 timed out', 'refused', '499 more store timeout failures in the last 10 s']);
      vi.advanceTimersByTime(60_000);
      expect(lines).toHaveLength(3);
      f.report('store timeout', 'again');
      expect(lines[3].msg).toBe('again');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('StoreHealth', () => {
  const quiet = () => new FailureLog({ error: () => undefined, info: () => undefined } as never);
  const timeout = new StoreTimeoutError('t');
  const gone = new StoreBadAnswerError('missing', { transient: false });

  it('fails after consecutive transient failures, not after one, and not for non-transient ones', () => {
    const h = new StoreHealth(async () => undefined, quiet());
    for (let i = 0; i < 10; i++) h.onRead({ ok: false, error: gone, attempts: 1, ms: 1 });
    expect(h.state().ok).toBe(true);
    for (let i = 1; i < FAILED_READS_TO_FAIL; i++) h.onRead({ ok: false, error: timeout, attempts: 1, ms: 1 });
    expect(h.state().ok).toBe(true);
    h.onRead({ ok: false, error: timeout, attempts: 1, ms: 1 });
    expect(h.state()).toEqual({ ok: false, failure: 'timeout', consecutiveFailures: FAILED_READS_TO_FAIL });
    h.onRead({ ok: true, attempts: 1, ms: 1 });
    expect(h.state().ok).toBe(true);
  });

  it('probes the store when failing, and a successful probe clears the state', async () => {
    let probes = 0;
    let h: StoreHealth;
    h = new StoreHealth(async () => {
      probes++;
      await new Promise((r) => setTimeout(r, 10));
      h.onRead({ ok: true, attempts: 1, ms: 1 });
    }, quiet());
    for (let i = 0; i < FAILED_READS_TO_FAIL; i++) h.onRead({ ok: false, error: timeout, attempts: 1, ms: 1 });
    expect(h.state().ok).toBe(false);
    await vi.waitFor(() => expect(h.state().ok).toBe(true));
    expect(probes).toBe(1);
  });
});
