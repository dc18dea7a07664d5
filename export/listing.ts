/**
 * The export's listing, `FOLDER/.tilebake-export`: one line per file, `hash<TAB>size<TAB>path`. It says
 * what the previous export wrote, so an incremental export compares hashes instead of reading files.
 * While an export moves files into place a marker file exists; a listing found with the marker may
 * be out of date, so the files it names are hashed again.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { contentHash } from './tiles.ts';

/** File name of the listing in the export folder. */
export const LISTING_FILE = '.tilebake-export';
/** Present while an export is switching files (it lists the paths being switched): the listing may be stale. */
export const COMMITTING_FILE = '.tilebake-export.committing';
/** First line of the listing. */
const HEADER = '# tilebake export listing v1';

/** One listed file. */
export interface Listed {
  hash: string;
  size: number;
}

/** Serialise a listing (sorted by path). */
export function formatListing(files: ReadonlyMap<string, Listed>): string {
  const lines = [...files.keys()].sort().map((p) => {
    const f = files.get(p)!;
    return `${f.hash}\t${f.size}\t${p}`;
  });
  return `${HEADER}\n${lines.join('\n')}${lines.length ? '\n' : ''}`;
}

/** Parse a listing; `where` names it in errors. */
export function parseListing(text: string, where: string): Map<string, Listed> {
  const files = new Map<string, Listed>();
  const lines = text.split('\n');
  if (lines[0] !== HEADER) throw new UserError(`${where}: not a tilebake export listing (first line "${lines[0]}")`);
  lines.slice(1).forEach((line, i) => {
    if (line === '') return;
    const m = /^([A-Za-z0-9_-]+)\t(\d+)\t(.+)$/.exec(line);
    if (!m) throw new UserError(`${where}: line ${i + 2}: expected hash<TAB>size<TAB>path`);
    files.set(m[3], { hash: m[1], size: Number(m[2]) });
  });
  return files;
}

/**
 * The files of the previous export in `root`: from its listing, re-hashed from disk when an export
 * was killed while switching files. An empty map for a new or empty folder; a UserError for a folder
 * with other files and no listing (an export never deletes what it did not write).
 */
export async function readPreviousExport(root: string, isEmpty: () => Promise<boolean>): Promise<Map<string, Listed>> {
  const where = join(root, LISTING_FILE);
  let text: string;
  try {
    text = await readFile(where, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    if (await isEmpty()) return new Map();
    throw new UserError(`${root}: not empty and not a tilebake export (no ${LISTING_FILE}); export into a new or empty folder`);
  }
  const listed = parseListing(text, where);
  const switching = await readFile(join(root, COMMITTING_FILE), 'utf8').catch(() => undefined);
  if (switching === undefined) return listed;
  // Interrupted while switching: what is on disk is the truth, for the listed and the switched paths.
  const checked = new Map<string, Listed>();
  for (const path of new Set([...listed.keys(), ...switching.split('\n').filter(Boolean)])) {
    const bytes = await readFile(join(root, path)).catch(() => undefined);
    if (bytes) checked.set(path, { hash: contentHash(bytes), size: bytes.length });
  }
  return checked;
}
