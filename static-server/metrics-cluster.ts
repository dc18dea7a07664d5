/**
 * One scrape for the whole server: with cluster workers the primary sums every worker's registry
 * (prom-client's AggregatorRegistry); a worker asked for /metrics asks the primary over IPC. The
 * `--metrics-port` listener (no auth, for a scraper on a private network) runs in the primary.
 */
import cluster from 'node:cluster';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';
import { HttpStatus } from '../lib/http-status.ts';
import { METRICS_CONTENT_TYPE, serverMetrics } from './metrics.ts';

/** IPC messages between a worker asking for the cluster's metrics and the primary. */
const enum Msg {
  Request = 'tilebake:metrics-req',
  Answer = 'tilebake:metrics-res',
}
/** How long a worker waits for the primary's answer (the aggregator itself gives up after 5 s). */
const ANSWER_TIMEOUT_MS = 6000;
/** The scrape path. */
export const METRICS_PATH = '/metrics';

interface MetricsRequest {
  type: Msg.Request;
  id: number;
}
interface MetricsAnswer {
  type: Msg.Answer;
  id: number;
  text?: string;
  error?: string;
}

let aggregator: AggregatorRegistry<PrometheusContentType> | undefined;
let nextId = 0;
const waiting = new Map<number, (a: MetricsAnswer) => void>();

/**
 * In the cluster primary: aggregate the workers' metrics on request (from the metrics listener and
 * from workers). In a worker: answer the primary's collection with this process's registry, and
 * route the primary's answers to `clusterMetricsText` callers. Idempotent.
 */
export function enableClusterMetrics(): void {
  if (aggregator) return;
  AggregatorRegistry.setRegistries([serverMetrics().registry]);
  aggregator = new AggregatorRegistry<PrometheusContentType>();
  if (cluster.isPrimary) {
    cluster.on('message', (worker, m: MetricsRequest) => {
      if (m?.type !== Msg.Request) return;
      const reply = (a: Omit<MetricsAnswer, 'type' | 'id'>) => {
        if (worker.isConnected()) worker.send({ type: Msg.Answer, id: m.id, ...a });
      };
      aggregator!.clusterMetrics().then(
        (text) => reply({ text }),
        (e: unknown) => reply({ error: (e as Error).message }),
      );
    });
  } else {
    process.on('message', (m: MetricsAnswer) => {
      if (m?.type !== Msg.Answer) return;
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    });
  }
}

/** The metrics of every worker summed (cluster), else of this process. */
export function clusterMetricsText(): Promise<string> {
  if (!aggregator) return serverMetrics().text();
  if (cluster.isPrimary) return aggregator.clusterMetrics();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`the cluster primary did not send the metrics within ${ANSWER_TIMEOUT_MS} ms`));
    }, ANSWER_TIMEOUT_MS);
    waiting.set(id, (a) => {
      clearTimeout(timer);
      if (a.text !== undefined) resolve(a.text);
      else reject(new Error(a.error ?? 'no metrics'));
    });
    process.send!({ type: Msg.Request, id } satisfies MetricsRequest);
  });
}

/** A JSON error answer in the server's shape. */
function sendJsonError(res: import('node:http').ServerResponse, status: number, error: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify({ error, status }));
}

/** A running `--metrics-port` listener. */
export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/**
 * Listen on `port` for `GET /metrics` without auth (anything else: a JSON 404/405), answering the
 * cluster's (or this process's) metrics.
 */
export async function startMetricsListener(port: number, host: string): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== METRICS_PATH) return sendJsonError(res, HttpStatus.NotFound, `no route for ${req.method} ${path} (this port serves ${METRICS_PATH})`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendJsonError(res, HttpStatus.MethodNotAllowed, `method ${req.method} not allowed on ${METRICS_PATH}`, { allow: 'GET, HEAD' });
    clusterMetricsText().then(
      (text) => {
        res.writeHead(HttpStatus.Ok, { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (e: unknown) => sendJsonError(res, HttpStatus.Unavailable, `metrics unavailable: ${(e as Error).message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${h}:${a.port}${METRICS_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
