// Piscina entry of the render pool, in plain JavaScript so that it runs before the thread can load
// TypeScript: it starts this thread's browser first (Chromium on the render page, which starts
// loading MapLibre and the first style), then loads the task (`workerData.task`: render-task.ts
// through tsx, or its compiled copy in dist/ without tsx), which drives that browser. Chromium and
// the page start while the thread loads the task and playwright-core, instead of after; playwright-core
// compiles from the V8 code cache (lib/code-cache.mjs) once a thread has written it.
import { workerData } from 'node:worker_threads';
import { enableCodeCache } from '../lib/code-cache.mjs';
import { spawnChromium } from './chromium-spawn.mjs';

/** RenderWorkerData (render-task.ts). */
const data = workerData;
const spawned = spawnChromium(data.browser, data.profiles);
// Written 1 s after playwright-core loads (with what connecting compiled): Piscina may end the thread without an exit event.
enableCodeCache(undefined, { writeAfterMs: 1000 });
if (data.task.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
const { createRenderTask } = await import(data.task);

export default createRenderTask(data, spawned);
