// The README's examples stay true: every fenced block marked ```sh example, in README.md and in each
// docs/*.md page, is run with bash against a server over a build of the sample (vector tiles, raster
// tiles of osm-bright, the elevation index, terrain and hillshade tiles, the Landsat imagery), with $T and
// $TILEBAKE_URL set as the README tells its reader to; each must succeed.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../static-server/serve.ts';
import { addSampleImagery } from './fixtures/imagery.ts';
import { serveFullOutputWithTerrain, type FullOutput } from './fixtures/server/full-output.ts';
import { ROOT } from './fixtures/server/helpers.ts';

const run = promisify(execFile);
const TOKEN = randomBytes(18).toString('base64url');

/** The bodies of a markdown file's fenced blocks whose info string is `sh example`. */
function exampleBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh example[ \t]*\n([\s\S]*?)^```[ \t]*$/gm)].map((m) => m[1]!);
}

/** The README and every docs page, each with its example blocks (a page without any has none). */
const PAGES = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const examples = (
  await Promise.all(PAGES.map(async (page) => exampleBlocks(await readFile(join(ROOT, page), 'utf8')).map((block, i) => [page, i + 1, block] as const)))
).flat();
const blocks = examples.filter(([page]) => page === 'README.md').map(([, , block]) => block);
let fx: FullOutput;
let server: RunningServer;
let cwd: string;

beforeAll(async () => {
  ({ fx, server } = await serveFullOutputWithTerrain(TOKEN, addSampleImagery));
  cwd = await mkdtemp(join(tmpdir(), 'tilebake-readme-'));
});

afterAll(async () => {
  await server?.close();
  if (fx) await rm(fx.out, { recursive: true, force: true });
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('README examples', () => {
  it('finds the marked blocks, and only those', () => {
    expect(exampleBlocks('```sh example\necho a\n```\n```sh\necho b\n```\n')).toEqual(['echo a\n']);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    // The examples moved out of the README (imagery, hillshade, static maps' GeoJSON, styles) still run.
    expect([...new Set(examples.map(([page]) => page))]).toEqual(expect.arrayContaining(['README.md', 'docs/http.md', 'docs/hillshade.md', 'docs/imagery.md', 'docs/wmts-static-maps.md']));
  });

  it.each(examples)('%s example %i runs against the sample build', async (_page, _i, block) => {
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', block], {
      cwd,
      env: { ...process.env, T: TOKEN, TILEBAKE_URL: server.url },
      timeout: 60_000,
    });
    // Every command either printed something or wrote a non-empty file.
    const written = [...block.matchAll(/-o (\S+)/g)].map((m) => m[1]!);
    for (const f of written) expect((await stat(join(cwd, f))).size, f).toBeGreaterThan(0);
    if (written.length < block.split('\n').filter((l) => l.startsWith('curl')).length) expect(stdout.trim()).not.toBe('');
  });

  it('fails for a wrong token, so the examples prove the token is checked', async () => {
    const block = blocks.find((b) => b.includes('/data/openmaptiles.json'))!;
    await expect(run('bash', ['-euo', 'pipefail', '-c', block], { cwd, env: { ...process.env, T: 'wrong', TILEBAKE_URL: server.url } })).rejects.toThrow(/401/);
  });
});
