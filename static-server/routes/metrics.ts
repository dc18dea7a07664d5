import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';
import { clusterMetricsText, METRICS_PATH } from '../metrics-cluster.ts';
import { METRICS_CONTENT_TYPE } from '../metrics.ts';

/** `GET /metrics` on the tile listener (behind the token): every worker's metrics summed, Prometheus text format. */
export async function registerMetricsRoute(app: FastifyInstance, _ctx: ServerContext): Promise<void> {
  app.get(METRICS_PATH, async (_req, reply) => {
    const text = await clusterMetricsText();
    return reply.header('cache-control', 'no-store').type(METRICS_CONTENT_TYPE).send(text);
  });
}
