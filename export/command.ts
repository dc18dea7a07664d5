/** `tilebake export` as the CLI runs it: the export, its summary, and the nginx configuration when asked. */
import { UserError } from '../lib/errors.ts';
import { loadTokens, TOKENS_ENV } from '../static-server/auth.ts';
import { progressQuiet } from '../lib/progress.ts';
import { openBuildToExport } from './build-source.ts';
import { exportBuild, exportSummary, type ExportOptions } from './index.ts';
import { loadNginxKeys, type NginxKey } from './nginx-access.ts';
import { writeNginxConf } from './nginx-conf.ts';
import { gzipTilesetIds } from './tiles.ts';

/** Options of the command: the export's, plus the nginx configuration's. */
export interface ExportCommandOptions extends ExportOptions {
  nginxConf?: string;
  listen: string;
  tokensFile?: string;
  /** Keys file: its origin keys, secret keys given in clear and their rates go into the nginx configuration. */
  keysFile?: string;
  auth: boolean;
  cors: string;
  heightUpstream: string;
}

export async function exportCommand(o: ExportCommandOptions): Promise<void> {
  // Tokens first: a bad tokens file fails before anything is written.
  if (o.nginxConf === undefined && (o.tokensFile !== undefined || o.keysFile !== undefined || !o.auth)) {
    throw new UserError('--tokens-file, --keys and --no-auth only apply to the nginx configuration: add --nginx-conf FILE', { exitCode: 2 });
  }
  const warn = (m: string) => progressQuiet() || process.stderr.write(`tilebake export: warning: ${m}\n`);
  const keys: NginxKey[] | undefined = o.keysFile !== undefined && o.auth ? await loadNginxKeys(o.keysFile, warn) : undefined;
  const haveTokens = (process.env[TOKENS_ENV] ?? '').trim() !== '' || o.tokensFile !== undefined;
  const tokens = o.nginxConf !== undefined && o.auth ? (keys?.length && !haveTokens ? [] : await loadTokens(process.env[TOKENS_ENV], o.tokensFile)) : null;
  const result = await exportBuild(o);
  if (!progressQuiet()) process.stderr.write(`tilebake: ${exportSummary(result, o.to)}`);
  if (o.nginxConf === undefined) return;
  const { store, manifest } = await openBuildToExport(o.out);
  const tokensPath = await writeNginxConf(o.nginxConf, {
    root: o.to,
    listen: o.listen,
    tokens,
    cors: o.cors,
    heightUpstream: o.heightUpstream,
    gzipTilesets: await gzipTilesetIds(store, manifest.tilesets),
    manifest,
    keys,
    versioned: result.versionId !== undefined,
  });
  if (!progressQuiet()) {
    process.stderr.write(`tilebake: wrote ${o.nginxConf}${tokensPath ? ` and ${tokensPath} (the accepted tokens, mode 0600)` : ''}: use it as http { include mime.types; include ${o.nginxConf}; }\n`);
    if (keys !== undefined) process.stderr.write('tilebake: nginx applies the keys\' origins, secrets and rates (429); it cannot enforce quotas or count usage, nor send RateLimit headers: that needs tilebake serve\n');
  }
}
