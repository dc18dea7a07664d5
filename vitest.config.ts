import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
    // Every OSM build of the run (in-process or through the CLI) uses one world z0–6 (pipeline/osm/world.ts),
    // built once beside the other shared fixtures (test/fixtures/cache.ts) and kept across runs.
    env: { TILEBAKE_WORLD_CACHE: resolve(import.meta.dirname, 'build', 'test-cache', 'world') },
  },
});
