/**
 * The two install sets: `make setup` (and so `make demo`, `make build` and the container image)
 * installs what tilebake needs to build and serve; what only the tests start comes from
 * scripts/setup-test.sh (`make test`). Run here as a user that is not root on a machine where no
 * package is installed (dpkg-query and id answer so, from a folder first on PATH): each script must
 * print the exact apt-get line for its own set, and fail before installing anything.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
/** Packages only the tests start: never in `make setup`'s set. */
const TEST_ONLY = ['slurm-wlm', 'munge', 'swift', 'swift-proxy', 'memcached', 'redis-server', 'postgresql-15-postgis-3', 'nginx-light', 'wrk'];
/** Packages tilebake cannot build or serve without. */
const RUNTIME = ['chromium-headless-shell', 'gdal-bin', 'libgdal-dev', 'tilemaker', 'osmium-tool', 'osmcoastline'];

const bin = mkdtempSync(join(tmpdir(), 'tilebake-setup-'));
// Nothing is installed, and this is not root.
writeFileSync(join(bin, 'dpkg-query'), '#!/bin/sh\necho "unknown ok not-installed"\n');
writeFileSync(join(bin, 'id'), '#!/bin/sh\necho 1000\n');
writeFileSync(join(bin, 'apt-get'), '#!/bin/sh\necho "apt-get must not run" >&2\nexit 99\n');
for (const f of ['dpkg-query', 'id', 'apt-get']) chmodSync(join(bin, f), 0o755);
afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** The packages a script asks for in its `apt-get install` line, and its exit status. */
function asked(script: string): { status: number | null; packages: string[]; output: string } {
  const r = spawnSync('bash', [script], { cwd: ROOT, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
  const output = r.stdout + r.stderr;
  const line = /sudo sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ([^']+)'/.exec(output);
  return { status: r.status, packages: line ? line[1].trim().split(/\s+/) : [], output };
}

describe('install sets', () => {
  it('make setup asks for what tilebake needs to build and serve, none of the test services', () => {
    const r = asked('scripts/setup.sh');
    expect(r.status, r.output).toBe(1);
    expect(r.output).not.toContain('apt-get must not run');
    for (const p of RUNTIME) expect(r.packages, p).toContain(p);
    for (const p of TEST_ONLY) expect(r.packages, p).not.toContain(p);
  });

  it('make test adds the services only the tests start', () => {
    const r = asked('scripts/setup-test.sh');
    expect(r.status, r.output).toBe(1);
    for (const p of TEST_ONLY) expect(r.packages, p).toContain(p);
    for (const p of RUNTIME) expect(r.packages, p).not.toContain(p);
  });

  it('make test runs both; make demo, make build and the container image only setup', () => {
    const make = readFileSync(join(ROOT, 'Makefile'), 'utf8');
    expect(make).toMatch(/^test: setup-test\b/m);
    expect(make).toMatch(/^setup-test: setup\b/m);
    expect(make).toMatch(/^build: setup\b/m);
    expect(make).toMatch(/^demo: build\b/m);
    const image = readFileSync(join(ROOT, 'deploy/container/Containerfile'), 'utf8');
    expect(image).toContain('make setup');
    expect(image).not.toMatch(/setup-test|make test/);
  });
});
