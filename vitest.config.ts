import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

/** The quick tier (`make check`): test files named `*.quick.test.ts`, guarded by test/quick-guard.mjs. */
const QUICK = 'test/**/*.quick.test.ts';
const QUICK_FILES = process.env.TILEBAKE_QUICK_FILES?.split(',');
// Every OSM build of the run (in-process or through the CLI) uses one world z0–6 (pipeline/osm/world.ts),
// built once beside the other shared fixtures (test/fixtures/cache.ts) and kept across runs.
const ENV = { TILEBAKE_WORLD_CACHE: resolve(import.meta.dirname, 'build', 'test-cache', 'world') };

export default defineConfig({
  test: {
    // Generous: CI shares its 2 cores with whatever else runs there. At a load average of ~40 on this
    // machine, tests that take 5-15 s when it is quiet hit the former 60 s (tests) and 180 s (hooks).
    // A hang still fails, just later.
    testTimeout: 180_000,
    hookTimeout: 600_000,
    // 2-core CI: files run in forks, two at a time; browser-heavy files mark themselves sequential.
    // Expensive fixtures (the sample build) are built once per run and shared: test/fixtures/cache.ts.
    pool: 'forks',
    maxWorkers: 2,
    // A folder per run where servers shared by several files (Swift) record their pids; stopped at the end.
    globalSetup: ['test/global-setup.ts'],
    // Each file's CPU seconds (children included) into build/test-cpu.jsonl, summed up after `make test`.
    setupFiles: ['test/setup-cpu.ts'],
    env: ENV,
    projects: [
      {
        extends: true,
        test: {
          name: 'quick',
          // One module graph per worker for the tier's many small files: importing fastify, sharp, GDAL and the
          // sources again for each file was most of its time.
          isolate: false,
          include: QUICK_FILES ?? [QUICK],
          // Starting a browser, a daemon or tilemaker here fails the run (test/quick-guard.mjs, test/quick-teardown.ts).
          execArgv: ['--import', resolve(import.meta.dirname, 'test/quick-guard.mjs')],
          globalSetup: ['test/global-setup.ts', 'test/quick-teardown.ts'],
          env: { ...ENV, TILEBAKE_QUICK_VIOLATIONS: resolve(import.meta.dirname, 'build', 'quick-violations.txt') },
        },
      },
      { extends: true, test: { name: 'full', include: ['test/**/*.test.ts'], exclude: QUICK_FILES ?? [QUICK] } },
    ],
  },
});
