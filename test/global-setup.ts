/**
 * vitest globalSetup: a folder for this run (`inject('testRunDir')`), where servers shared by several
 * test files record themselves (test/fixtures/run-services.ts); they are stopped by PID when the run
 * ends. Folders of earlier runs whose vitest died without this teardown are cleaned up the same way.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { alive } from '../lib/process-tree.ts';
import { stopServices } from './fixtures/run-services.ts';

/** Run folders are `<tmp>/tilebake-test-run-<pid of their vitest>-<random>`. */
const PREFIX = 'tilebake-test-run-';

async function stopRun(dir: string): Promise<void> {
  await stopServices(dir);
  await rm(dir, { recursive: true, force: true });
}

/** Run folders left by a vitest that was killed before its teardown. */
async function reapOrphans(): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    const owner = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split('-')[0]) : NaN;
    if (!Number.isInteger(owner) || alive(owner)) continue;
    await stopRun(join(tmpdir(), name));
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await reapOrphans();
  const dir = await mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`));
  project.provide('testRunDir', dir);
  return () => stopRun(dir);
}
