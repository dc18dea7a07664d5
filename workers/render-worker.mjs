// Piscina entry of the render pool, in plain JavaScript so that it runs before the thread can load
// TypeScript: it starts this thread's browser first (Chromium on the render page, which starts
// loading MapLibre and the first style), then loads the task (`workerData.task`: render-task.ts
// through tsx, or its compiled copy in dist/ without tsx), which drives that browser. Chromium and
// the page start while the thread loads the task and playwright-core, instead of after.
import { workerData } from 'node:worker_threads';
import { spawnChromium } from './chromium-spawn.mjs';

/** RenderWorkerData (render-task.ts). */
const data = workerData;
const spawned = spawnChromium(data.browser, data.profiles);
if (data.task.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
const { createRenderTask } = await import(data.task);

export default createRenderTask(data, spawned);
