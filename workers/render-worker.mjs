// Piscina entry of the render pool, in plain JavaScript so that it runs before the thread can load
// TypeScript: it starts this thread's browser first (Chromium on the render page, which starts
// loading MapLibre and the first style), then loads tsx and the task (render-task.ts), which drives
// that browser. Chromium and the page start while the thread loads tsx and playwright-core, instead
// of after (the pool runs without tsx in its execArgv: createPool with `tsx: false`).
import { workerData } from 'node:worker_threads';
import { spawnChromium } from './chromium-spawn.mjs';

/** RenderWorkerData (render-task.ts). */
const data = workerData;
const spawned = spawnChromium(data.browser, data.profiles);
const { register } = await import('tsx/esm/api');
register();
const { createRenderTask } = await import('./render-task.ts');

export default createRenderTask(data, spawned);
