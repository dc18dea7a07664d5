/** `tilebake export --out DIR|URL --to FOLDER`: a build as plain files plus an nginx configuration (export/). */
import type { Argv } from 'yargs';

/** Adds the `export` command to the program. */
export function addExportCommand(y: Argv): Argv {
  return y.command(
    'export',
    'Write a build as plain files in the URL layout of the interface (for nginx, a bucket or any static host), incrementally',
    (y) =>
      y
        .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Build folder or http(s):// base URL' })
        .option('to', { type: 'string', demandOption: true, describe: 'Export folder (new, empty, or a previous export: only changes are written)' })
        .option('public-url', { type: 'string', demandOption: true, describe: 'Base URL the export is served at (for TileJSON and style URLs)' })
        .option('only', { choices: ['tilesets', 'styles', 'fonts'] as const, array: true, describe: 'Export these parts only (others are left as they are)' })
        .option('list-changes', { type: 'boolean', default: false, describe: 'Print added, changed and removed paths on stdout, one per line' })
        .option('versioned-urls', { type: 'boolean', default: true, describe: 'Write the build under v/{build}/ too and hand out those URLs (cached for a year), as serve does' })
        .option('keep', { type: 'number', default: 2, describe: 'Build versions kept under v/ (the current one included), for maps opened before this export' })
        .option('nginx-conf', { type: 'string', describe: 'Also write an nginx configuration (the inside of http { }) serving the export' })
        .option('listen', { type: 'string', default: '8080', describe: 'nginx listen address: PORT or ADDR:PORT' })
        .option('tokens-file', { type: 'string', describe: 'Bearer tokens for nginx, one per line (TILEBAKE_TOKENS too)' })
        .option('keys', { type: 'string', describe: 'Keys file: its origin keys are accepted by nginx without a token (docs/keys.md)' })
        .option('auth', { type: 'boolean', default: true, describe: 'Require bearer tokens in nginx (--no-auth to disable)' })
        .option('cors', { type: 'string', default: '*', describe: 'Access-Control-Allow-Origin in nginx (empty to disable)' })
        .option('height-upstream', { type: 'string', default: '127.0.0.1:8081', describe: 'HOST:PORT of `tilebake serve --routing-port` for /height' }),
    async (a) => {
      const { exportCommand } = await import('../../export/command.ts');
      await exportCommand({
        out: a.out,
        to: a.to,
        publicUrl: a['public-url'],
        only: a.only,
        listChanges: a['list-changes'],
        versionedUrls: a['versioned-urls'],
        keep: a.keep,
        nginxConf: a['nginx-conf'],
        listen: a.listen,
        tokensFile: a['tokens-file'],
        keysFile: a.keys,
        auth: a.auth,
        cors: a.cors,
        heightUpstream: a['height-upstream'],
      });
    },
  );
}
