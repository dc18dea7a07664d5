/**
 * Patching the previous version's archive instead of generating a tileset again: for an OSM extract
 * that OsmChange files turned into the configured source (a night of `tilebake update`), only the
 * tiles the change can change (osm/changed-tiles.ts) are generated from the new extract, and spliced
 * into a copy of the previous archive; every other tile is copied as it was. The result equals a full
 * generation of the new extract tile for tile (test/update-*.test.ts compare them on real dailies).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import { zxyToTileId } from '../../lib/pmtiles/index.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { changedTiles } from '../osm/changed-tiles.ts';
import { readOsmHeader } from '../osm/pbf-header.ts';
import { findTool, killLeftovers, OSMIUM, TILEMAKER } from '../osm/tools.ts';
import { logLine, stepsText } from '../../lib/progress.ts';
import { inTileBox, openOsm, tileBox } from '../osm/source.ts';
import { openPmtiles } from '../sources/pmtiles.ts';
import type { SourceTile, TileSource } from '../sources/common.ts';
import { packSource, type PackOptions, type PackResult } from './write-pmtiles.ts';

/** How the configured source came about: `changes` applied to `previous`, the extract the previous archive shows. */
export interface OsmPatch {
  previous: string;
  changes: string[];
}

/** What `patchOsmArchive` did: nothing changed (link the previous archive), or the patched archive. */
export type PatchOutcome = { unchanged: true } | { unchanged: false; result: PackResult };

const MS_PER_S = 1000;
const sameBox = (a: BBox | undefined, b: BBox | undefined) => !!a && !!b && a.every((v, i) => v === b[i]);

/** The previous archive's tiles with `changed` replaced by `fresh` (absent there: removed), in tile-id order. */
function splice(prev: TileSource, changed: ReadonlySet<string>, fresh: Map<number, SourceTile>): TileSource {
  const ids = [...fresh.keys()].sort((a, b) => a - b);
  return {
    ...prev,
    count: prev.count + fresh.size,
    async *tiles(): AsyncIterable<SourceTile> {
      let i = 0;
      for await (const t of prev.tiles()) {
        const id = zxyToTileId(t.z, t.x, t.y);
        for (; i < ids.length && ids[i] < id; i++) yield fresh.get(ids[i])!;
        if (!changed.has(`${t.z}/${t.x}/${t.y}`)) yield t;
      }
      for (; i < ids.length; i++) yield fresh.get(ids[i])!;
    },
  };
}

/**
 * Patch `prevArchive` (generated from `patch.previous` with the same profile and options) into `output`
 * for the OSM extract `source`; undefined when a patch cannot be exact (the extract's bounds moved, the
 * coastline changed): generate the whole tileset then.
 */
export async function patchOsmArchive(source: string, prevArchive: string, output: string, patch: OsmPatch, opts: PackOptions & { workDir: string; label: string }): Promise<PatchOutcome | undefined> {
  const pidFile = join(opts.workDir, 'changes.pids');
  await killLeftovers(pidFile, opts.workDir);
  try {
    return await patchIn(source, prevArchive, output, patch, { ...opts, pidFile });
  } finally {
    await rm(opts.workDir, { recursive: true, force: true });
  }
}

/** `patchOsmArchive` with its work folder made (removed by the caller). */
async function patchIn(source: string, prevArchive: string, output: string, patch: OsmPatch, opts: PackOptions & { workDir: string; label: string; pidFile: string }): Promise<PatchOutcome | undefined> {
  const t0 = performance.now();
  const [before, after] = [await readOsmHeader(patch.previous), await readOsmHeader(source)];
  if (!sameBox(before.bbox, after.bbox)) {
    logLine(`${opts.label}: the extract's bounds changed: generating every tile`);
    return undefined;
  }
  const box = tileBox(after.bbox!);
  const [osmium, tilemaker] = [await findTool(OSMIUM), await findTool(TILEMAKER)];
  const changed = await changedTiles({
    osmium, tilemaker, before: patch.previous, after: source, changes: patch.changes, box, keep: inTileBox(box),
    workDir: join(opts.workDir, 'changes'), pidFile: opts.pidFile, label: `${opts.label} changes`, languages: opts.languages ?? DEFAULT_LANGUAGES,
  });
  const found = (performance.now() - t0) / MS_PER_S;
  if (!changed) {
    logLine(`${opts.label}: the change touches the coastline: generating every tile`);
    return undefined;
  }
  logLine(`${opts.label}: the change can change ${changed.size} tiles (found in ${found.toFixed(1)} s)`);
  if (changed.size === 0) return { unchanged: true };

  const fresh = new Map<number, SourceTile>();
  const generated = await openOsm(source, { workDir: join(opts.workDir, 'tiles'), label: opts.label, only: changed, languages: opts.languages });
  try {
    for await (const t of generated.tiles()) fresh.set(zxyToTileId(t.z, t.x, t.y), t);
  } finally {
    await generated.close();
  }
  const prev = await openPmtiles(prevArchive);
  try {
    const result = await packSource(splice(prev, changed, fresh), output, { name: opts.name, attribution: opts.attribution, description: opts.description, label: opts.label });
    const phases = [{ name: 'changed tiles', seconds: found }, ...(generated.phases ?? []), ...result.phases];
    logLine(`${opts.label}: generated ${changed.size} changed tiles (${fresh.size} not empty) and copied the others from the previous archive (${stepsText(phases)})`);
    return { unchanged: false, result: { ...result, phases } };
  } finally {
    await prev.close();
  }
}
