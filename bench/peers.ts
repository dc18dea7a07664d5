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

/**
 * Write `<prefix>/nginx.conf` for a benchmark: nginx tuned for load (auto workers, no access log,
 * sendfile, long keep-alive), every path inside `prefix`, and `http` holding `httpBody`. Start it with
 * `nginx -p <prefix> -c <prefix>/nginx.conf -g 'daemon off;'`.
 */
export function writeBenchNginxConf(prefix: string, httpBody: string): string {
  // nginx opens <prefix>/logs/error.log before it reads the configuration.
  mkdirSync(join(prefix, 'logs'), { recursive: true });
  const file = join(prefix, 'nginx.conf');
  writeFileSync(
    file,
    `worker_processes auto;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path ${prefix}/tmp-body;
  proxy_temp_path ${prefix}/tmp-proxy;
  fastcgi_temp_path ${prefix}/tmp-fastcgi;
  uwsgi_temp_path ${prefix}/tmp-uwsgi;
  scgi_temp_path ${prefix}/tmp-scgi;
${httpBody}
}
`,
  );
  return file;
}
