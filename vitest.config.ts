import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // 2-core CI: files run in forks, two at a time; browser-heavy files mark themselves sequential.
    pool: 'forks',
    maxWorkers: 2,
  },
});
