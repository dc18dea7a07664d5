// Piscina entry of the render pool, in plain JavaScript so that it runs before the thread can load
// TypeScript: it loads the task (`workerData.task`: render-task.ts through tsx, or its compiled copy
// in dist/ without tsx), which starts this thread's browser and drives it.
import { workerData } from 'node:worker_threads';

/** RenderWorkerData (render-task.ts). */
const data = workerData;
if (data.task.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
const { createRenderTask } = await import(data.task);

export default createRenderTask(data);
