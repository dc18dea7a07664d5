#!/usr/bin/env node
// tilebake command entry. The sources are TypeScript run through tsx's loader; the loader is also
// put on process.execArgv so that Piscina worker threads and cluster workers load it too.
import { register } from 'tsx/esm/api';

const loader = import.meta.resolve('tsx');
if (!process.execArgv.includes(loader)) process.execArgv.push('--import', loader);
register();
const { main } = await import('../pipeline/cli.ts');
await main(process.argv.slice(2));
