/**
 * A/B of static images through the whole server: `tilebake serve` from each checkout in turn over the
 * bench's z14 build, wrk over the bench's views (bench/results/static-map/views.txt, written by run.ts;
 * the same views are made here if absent), whole rounds alternated so that a loaded machine weighs on
 * each alike. Per run: images/s, server CPU ms per image (all server processes) and V8 mark-compacts
 * per 100 images (node's --trace-gc in the server): what compare.ts, composing in one process
 * without HTTP, cannot show (the garbage of requests, responses and caches under load).
 *
 *   node --import tsx bench/static-map/serve-ab.ts [--rounds 3] [--duration 15] [--warmup 3] [--connections 32] CHECKOUT...
 *
 * A checkout needs node_modules and its dist/ built (scripts/build-js.mjs).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { currentVersionDir } from '../../lib/build-version.ts';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { treeCpuMs } from '../../test/fixtures/measure.ts';
import { stop } from '../wrk.ts';
import { buildSample, STYLE, views, work } from './sample.ts';
import { serve, wrk } from './server.ts';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
  },
});
const ROUNDS = Number(args.rounds), DURATION = Number(args.duration), WARMUP = Number(args.warmup), CONNECTIONS = Number(args.connections);
if (positionals.length === 0) throw new Error('usage: serve-ab.ts [--rounds R] [--duration S] [--warmup S] [--connections C] CHECKOUT...');
const checkouts = positionals.map((p) => resolve(p));

const out = buildSample(14);
const viewList = join(work, 'views.txt');
if (!existsSync(viewList)) {
  const entry = (await readManifestOrEmpty((await currentVersionDir(out))!.dir)).styles[STYLE];
  writeFileSync(viewList, `${views(entry.bounds as BBox, 2000).join('\n')}\n`);
}

interface Run { rps: number; cpuMs: number; marks: number }
const runs = new Map<string, Run[]>(checkouts.map((c) => [c, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const checkout of checkouts) {
    const trace = join(work, 'serve-ab-gc.log');
    const marks = () => readFileSync(trace, 'latin1').split('Mark-Compact').length - 1;
    const server = await serve(out, { checkout, nodeArgs: ['--trace-gc'], stdoutFile: trace });
    try {
      if (WARMUP > 0) wrk(server.base, viewList, `/styles/${STYLE}/static/`, WARMUP, CONNECTIONS);
      const [cpu0, marks0] = [treeCpuMs(server.proc.pid!), marks()];
      const f = wrk(server.base, viewList, `/styles/${STYLE}/static/`, DURATION, CONNECTIONS);
      const images = f.rps * DURATION;
      const run = { rps: f.rps, cpuMs: (treeCpuMs(server.proc.pid!) - cpu0) / images, marks: (100 * (marks() - marks0)) / images };
      runs.get(checkout)!.push(run);
      console.log(`round ${round} ${checkout}: ${run.rps.toFixed(0)} images/s, ${run.cpuMs.toFixed(2)} server CPU ms/image, ${run.marks.toFixed(1)} mark-compacts per 100 images${f.errors ? `, ${f.errors} errors` : ''}`);
    } finally {
      await stop(server.proc);
    }
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`\n| checkout | images/s | server CPU ms per image | mark-compacts per 100 images |\n| --- | ---: | ---: | ---: |`);
for (const [c, rs] of runs) console.log(`| ${c} | ${mean(rs.map((r) => r.rps)).toFixed(0)} | ${mean(rs.map((r) => r.cpuMs)).toFixed(2)} | ${mean(rs.map((r) => r.marks)).toFixed(1)} |`);
