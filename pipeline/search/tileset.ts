/**
 * A tileset's search index in a build version (`data/<id>.search.sqlite`, the manifest's
 * `tilesets.<id>.search`): linked from the previous version when its extract and settings are the same,
 * updated from it when `tilebake update` made the extract from the previous one with change files, else
 * built from the extract. Recorded in the version's deps as `search:<id>`.
 */
import { join } from 'node:path';
import { sha256File } from '../../lib/hash.ts';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import type { SearchIndexEntry } from '../../lib/manifest.ts';
import { logLine } from '../../lib/progress.ts';
import { SEARCH_FORMAT } from '../../lib/search/schema.ts';
import type { TilesetConfig } from '../config/index.ts';
import { hashInputs, linkFile, type Deps } from '../reuse.ts';
import { removeEmptyWorkParents } from '../work-dir.ts';
import { buildSearchIndex, type SearchBuildResult } from './build.ts';
import { updateSearchIndex, type SearchPatch } from './update.ts';

/** Version of how an extract becomes an index; bump when the build changes, so indexes are built again. */
const SEARCH_BUILD_VERSION = 'tilebake-search-build/1';

/** The index file of tileset `id`, relative to the version folder. */
export function searchIndexPath(id: string): string {
  return `data/${id}.search.sqlite`;
}

/** The deps key of tileset `id`'s index. */
const depsKey = (id: string) => `search:${id}`;

/** What the index of `t` is made from besides its extract's bytes. */
function recipe(t: TilesetConfig): string {
  return `${SEARCH_BUILD_VERSION}:${SEARCH_FORMAT}:${JSON.stringify([t.languages ?? DEFAULT_LANGUAGES, t.bbox ?? null])}`;
}

/** The fingerprint of an index of `t` made from the extract `source`. */
async function fingerprintOf(t: TilesetConfig, source: string): Promise<string> {
  return `${recipe(t)}:${await hashInputs([source], source)}`;
}

/** The previous version a tileset's index may come from. */
export interface PreviousSearch {
  dir: string;
  entry?: SearchIndexEntry;
  deps: Deps;
}

/**
 * Write the search index of tileset `t` into version folder `outDir` (see the module comment); its
 * manifest entry and deps, or undefined when the tileset has no index. `patch`: the tileset's extract
 * is `patch.before` with `patch.changes` applied.
 */
export async function searchIndexFor(t: TilesetConfig, outDir: string, o: { previous?: PreviousSearch; patch?: SearchPatch; workDir: string }): Promise<{ entry: SearchIndexEntry; deps: Deps } | undefined> {
  if (!t.search) return undefined;
  const source = t.search.source;
  const rel = searchIndexPath(t.id);
  const output = join(outDir, rel);
  const label = `search ${t.id}`;
  const languages = [...(t.languages ?? DEFAULT_LANGUAGES)];
  const fingerprint = await fingerprintOf(t, source);
  const prev = o.previous?.entry ? { file: join(o.previous.dir, o.previous.entry.index), entry: o.previous.entry, recorded: o.previous.deps[depsKey(t.id)] } : undefined;
  const done = async (r: SearchBuildResult | undefined) => {
    const entry: SearchIndexEntry = r ? { index: rel, entries: r.entries, bytes: r.bytes, sha256: await sha256File(output), languages } : { ...prev!.entry, index: rel };
    return { entry, deps: { [depsKey(t.id)]: fingerprint } };
  };
  if (prev && prev.recorded === fingerprint) {
    await linkFile(prev.file, output);
    logLine(`${label}: extract unchanged, index reused from the previous build`);
    return done(undefined);
  }
  const opts = { languages, bbox: t.bbox, workDir: join(o.workDir, 'search', t.id), label };
  try {
    if (prev && o.patch && prev.recorded === (await fingerprintOf(t, o.patch.before))) {
      const r = await updateSearchIndex(prev.file, source, o.patch, output, opts);
      if (r) return await done(r);
    }
    return await done(await buildSearchIndex(source, output, { ...opts, previous: prev?.file }));
  } finally {
    await removeEmptyWorkParents(opts.workDir);
  }
}
