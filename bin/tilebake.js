#!/usr/bin/env node
// tilebake command entry. Runs the compiled JavaScript in dist/ (scripts/build-js.mjs, run by `make
// setup`) when it is current; else the TypeScript sources through tsx's loader, which is also put on
// process.execArgv so that Piscina worker threads and cluster workers load it too.
import cluster from 'node:cluster';
import { distState } from './dist.js';

const dist = distState();
if (dist.state === 'fresh') {
  const { main } = await import(dist.cli);
  await main(process.argv.slice(2));
} else {
  if (dist.state === 'stale' && cluster.isPrimary) {
    process.stderr.write(`tilebake: dist/ is older than ${dist.file}: running the sources through tsx (make build-js compiles them again)\n`);
  }
  const { register } = await import('tsx/esm/api');
  const loader = import.meta.resolve('tsx');
  if (!process.execArgv.includes(loader)) process.execArgv.push('--import', loader);
  register();
  const { main } = await import('../cli/index.ts');
  await main(process.argv.slice(2));
}
