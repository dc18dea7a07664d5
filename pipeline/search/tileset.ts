/**
 * A tileset's search index in a build version (`data/<id>.search.sqlite`, the manifest's
 * `tilesets.<id>.search`): linked from the previous version when its extract and settings are the same,
 * updated from it when `tilebake update` made the extract from the previous one with change files, else
 * built from the extract. A GIS tileset's is built from its layers (gis.ts): linked when the files GDAL
 * reads and the settings are the same; a database's is built each time and linked when its bytes are the
 * previous one's. Recorded in the version's deps as `search:<id>`.
 */
import { join } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { sha256File } from '../../lib/hash.ts';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import type { SearchIndexEntry } from '../../lib/manifest.ts';
import { logLine } from '../../lib/progress.ts';
import { SEARCH_FORMAT } from '../../lib/search/schema.ts';
import { jsonPath, type GisSearchConfig, type TilesetConfig } from '../config/index.ts';
import { gisSourceFiles } from '../sources/gis.ts';
import { detectInputKind } from '../sources/index.ts';
import { hashInputs, linkFile, type Deps } from '../reuse.ts';
import { removeEmptyWorkParents } from '../work-dir.ts';
import { buildSearchIndex, type SearchBuildResult } from './build.ts';
import { buildGisSearchIndex, GIS_SEARCH_VERSION } from './gis.ts';
import { updateSearchIndex, type SearchPatch } from './update.ts';

/** Version of how an extract becomes an index; bump when the build changes, so indexes are built again. */
const SEARCH_BUILD_VERSION = 'tilebake-search-build/2';

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
  const rel = searchIndexPath(t.id);
  const output = join(outDir, rel);
  const label = `search ${t.id}`;
  const languages = [...(t.languages ?? DEFAULT_LANGUAGES)];
  const prev = o.previous?.entry ? { file: join(o.previous.dir, o.previous.entry.index), entry: o.previous.entry, recorded: o.previous.deps[depsKey(t.id)] } : undefined;
  const made = async (r: SearchBuildResult | undefined, fingerprint: string) => {
    const entry: SearchIndexEntry = r ? { index: rel, entries: r.entries, bytes: r.bytes, sha256: await sha256File(output), languages } : { ...prev!.entry, index: rel };
    return { entry, deps: { [depsKey(t.id)]: fingerprint } };
  };
  if (t.search.gis) return gisIndexFor({ ...t, search: { gis: t.search.gis } }, output, prev, made, { languages, label });
  const source = t.search.source;
  const fingerprint = await fingerprintOf(t, source);
  const done = (r: SearchBuildResult | undefined) => made(r, fingerprint);
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

/** The previous version's index of a tileset, with the fingerprint its deps record. */
interface PreviousIndex {
  file: string;
  entry: SearchIndexEntry;
  recorded: string | undefined;
}

/**
 * The index of GIS tileset `t` (see the module comment): its fingerprint is the search settings, the
 * layers' sources, GDAL's version and the files GDAL reads; a database's, the index's own bytes.
 */
async function gisIndexFor(
  t: TilesetConfig & { search: { gis: GisSearchConfig } },
  output: string,
  prev: PreviousIndex | undefined,
  made: (r: SearchBuildResult | undefined, fingerprint: string) => Promise<{ entry: SearchIndexEntry; deps: Deps }>,
  opts: { languages: string[]; label: string },
): Promise<{ entry: SearchIndexEntry; deps: Deps }> {
  const kind = await detectInputKind(t.source);
  if (kind !== 'gis' && kind !== 'postgis') {
    throw new UserError(`${jsonPath(['tilesets', t.id, 'search'])}: the source is neither an OpenStreetMap extract nor GIS data: give the extract to index, {"source": "extract.osm.pbf"}`);
  }
  const layers = Object.entries(t.layers ?? {}).map(([k, l]) => [k, l.sql ?? l.table ?? l.layer ?? k]);
  const recipe = `${SEARCH_BUILD_VERSION}:${GIS_SEARCH_VERSION}:${SEARCH_FORMAT}:gdal ${(await loadGdal()).version}:${JSON.stringify([t.search.gis, layers, opts.languages])}`;
  if (kind === 'gis') {
    const fingerprint = `${recipe}:${await hashInputs(await gisSourceFiles(t.source), t.source)}`;
    if (prev && prev.recorded === fingerprint) {
      await linkFile(prev.file, output);
      logLine(`${opts.label}: source unchanged, index reused from the previous build`);
      return made(undefined, fingerprint);
    }
    return made(await buildGisSearchIndex(t, false, output, { ...opts, previous: prev?.file }), fingerprint);
  }
  const r = await buildGisSearchIndex(t, true, output, { ...opts, previous: prev?.file });
  const sha256 = await sha256File(output);
  const fingerprint = `${recipe}:index:${sha256}`;
  if (prev && prev.recorded === fingerprint && prev.entry.sha256 === sha256) {
    // The same bytes: one file on disk for both versions.
    await linkFile(prev.file, output);
    logLine(`${opts.label}: the database gives the same index, reused from the previous build`);
    return made(undefined, fingerprint);
  }
  return made(r, fingerprint);
}
