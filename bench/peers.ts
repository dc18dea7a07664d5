/**
 * Peers measured beside tilebake, installed on demand into bench/.peers (ignored by git) so the
 * project's own install stays lean: tileserver-gl-light from npm. nginx and wrk come from Debian.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = resolve(dirname(fileURLToPath(import.meta.url)), '.peers');

/** Install the peers if missing and return their commands. */
export function ensurePeers(): { tileserverGl: string } {
  const tileserverGl = join(dir, 'node_modules/.bin/tileserver-gl');
  if (!existsSync(tileserverGl)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'tilebake-bench-peers', private: true, dependencies: { 'tileserver-gl-light': '^5.6.0' }, allowScripts: { sqlite3: true } }, null, 2),
    );
    console.log('installing tileserver-gl-light into bench/.peers (a few minutes the first time)');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
  }
  for (const cmd of ['wrk', '/usr/sbin/nginx']) {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    } catch {
      throw new Error(`${cmd} missing: apt-get install wrk nginx-light (or run make setup)`);
    }
  }
  return { tileserverGl };
}
