/**
 * What a prepared style's sources read from the build's tilesets, for the two rules that depend on
 * the tiles under a view: which metatiles an incremental build re-renders (the changed tiles of each
 * tileset since the previous version) and which metatiles share a view (view keys, dedup.ts). Both
 * read the archives through a Store, where the render reads them: the build folder, or a shard's run
 * location (a shared folder or S3) by ranged reads, so they work the same in a build and in a shard.
 */
import { Memo } from '../../lib/shared-work.ts';
import { findManifest, type Manifest } from '../../lib/manifest.ts';
import type { Store } from '../../lib/storage.ts';
import { changedTiles, tilesetArchiveRef } from './archive.ts';
import { ViewKeys, type PositionRule } from './dedup.ts';
import type { ChangedSource, SourceGrid } from './selection.ts';

/** A prepared style's sources (`tilebake://data/<tileset>.json` URLs). */
type StyleSources = { sources: Record<string, Record<string, unknown>> };

/** Per tileset id: the tiles changed since the previous version (undefined: not comparable), computed once per stage. */
export type ChangedTilesets = (id: string) => Promise<Set<string> | undefined>;

/**
 * What a tileset entry tells MapLibre (TileJSON) besides its tiles: a change here changes which tiles a view
 * loads. The MLT archive is left out: the render reads the MVT tiles, and the MLT ones encode the same tiles;
 * so is the search index, which no tile shows, and so are the counts of a raster tileset's @2x archive
 * (the render reads the 1x tiles).
 */
function tileJsonShape(e: Manifest['tilesets'][string]): string {
  const { tiles: _tiles, bytes: _bytes, mlt: _mlt, search: _search, hidpi, ...rest } = e;
  // A raster tileset's @2x archive: its zooms count (they are the TileJSON's), not its size.
  return JSON.stringify({ ...rest, ...(hidpi ? { hidpi: hidpi.maxzoom } : {}) });
}

/**
 * The changed tiles of each tileset between the previous version (its store) and this one (`data`:
 * where this build's tileset archives are read), lazily, once each.
 */
export function changedTilesets(data: Store, previous: Store | undefined, manifest: Manifest): ChangedTilesets {
  const memo = new Memo<string, Set<string> | undefined>();
  const prevManifest = previous ? findManifest(previous) : undefined;
  return (id) =>
    memo.get(id, async () => {
      const before = (await prevManifest)?.tilesets[id];
      const after = manifest.tilesets[id];
      if (!previous || !before || !after || tileJsonShape(before) !== tileJsonShape(after)) return undefined;
      return changedTiles(tilesetArchiveRef(previous, before), tilesetArchiveRef(data, after));
    });
}

/** The style's sources that read a built tileset: its id, its manifest entry (undefined: not built) and the grid MapLibre loads it on. */
function tilesetSources(style: StyleSources, manifest: Manifest): { id: string; entry?: Manifest['tilesets'][string]; grid: SourceGrid }[] {
  const out: { id: string; entry?: Manifest['tilesets'][string]; grid: SourceGrid }[] = [];
  for (const src of Object.values(style.sources)) {
    const m = typeof src.url === 'string' ? /^tilebake:\/\/data\/(.+)\.json$/.exec(src.url) : null;
    if (!m) continue;
    const id = decodeURIComponent(m[1]);
    const e = manifest.tilesets[id];
    out.push({ id, entry: e, grid: { minzoom: e?.minzoom ?? 0, maxzoom: e?.maxzoom ?? 0, tileSize: typeof src.tileSize === 'number' ? src.tileSize : 512 } });
  }
  return out;
}

/** The style's tileset sources with their changed tiles; undefined when one cannot be compared. */
export async function changedSources(style: StyleSources, manifest: Manifest, changed: ChangedTilesets): Promise<ChangedSource[] | undefined> {
  const out: ChangedSource[] = [];
  for (const s of tilesetSources(style, manifest)) {
    const tiles = await changed(s.id);
    if (!tiles || !s.entry) return undefined;
    out.push({ grid: s.grid, changed: tiles });
  }
  return out;
}

/** View keys of a style at one scale (`styleKey`: its render fingerprint), its tileset archives read from `data` (where the render reads them). */
export function viewKeys(style: StyleSources, manifest: Manifest, data: Store, opts: { styleKey: string; margin: number; rule: PositionRule }): Promise<ViewKeys> {
  const sources = tilesetSources(style, manifest).flatMap((s) => (s.entry ? [{ grid: s.grid, archive: tilesetArchiveRef(data, s.entry) }] : []));
  return ViewKeys.open(sources, opts.styleKey, opts.margin, opts.rule);
}
