// Piscina entry of the MLT pool (pipeline/vector/mlt.ts), in plain JavaScript so that it runs before the thread
// can load TypeScript: it loads the task module `workerData.task` (mlt-encode.ts through tsx, or its
// compiled copy in dist/ without tsx), as workers/render-worker.mjs does for the render pool.
import { workerData } from 'node:worker_threads';

if (workerData.task.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
const { default: encodeMltTiles } = await import(workerData.task);

export default encodeMltTiles;
