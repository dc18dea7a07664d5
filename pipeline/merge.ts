/**
 * `tilebake merge OUT PARTIALS...`: combine the partial archives of a sharded render
 * (`tilebake shard`; `tilebake publish` merges each archive with it) into one PMTiles archive.
 */
import { UserError } from '../lib/errors.ts';
import { openArchiveFile, PMTilesWriter, writerOptionsOf, type ArchiveReader } from '../lib/pmtiles/index.ts';
import { logLine } from '../lib/progress.ts';
import { RENDER_METADATA_KEY, type RenderIdentity } from './render/archive.ts';

/** Check that tilebake partials belong together and cover every shard exactly once. */
function checkShards(partials: string[], ids: (RenderIdentity | undefined)[]): void {
  const ours = ids.filter((i): i is RenderIdentity => i !== undefined);
  if (ours.length === 0) return;
  if (ours.length !== ids.length) {
    throw new UserError(`${partials[ids.indexOf(undefined)]}: not a tilebake render shard (metadata "${RENDER_METADATA_KEY}" missing) — all partials must come from the shards of one run`);
  }
  const first = ours[0];
  const count = first.shard?.count;
  const seen = new Map<number, string>();
  ours.forEach((id, i) => {
    if (id.fingerprint !== first.fingerprint) {
      throw new UserError(`${partials[i]}: rendered from a different style, data or settings than ${partials[0]} (fingerprints differ)`);
    }
    if (!id.shard || id.shard.count !== count) throw new UserError(`${partials[i]}: shard ${id.shard ? `${id.shard.index}/${id.shard.count}` : 'none'} does not match ${partials[0]} (shard count ${count})`);
    const other = seen.get(id.shard.index);
    if (other !== undefined) throw new UserError(`${partials[i]}: shard ${id.shard.index}/${count} is also given as ${other}`);
    seen.set(id.shard.index, partials[i]);
  });
  const missing = Array.from({ length: count ?? 0 }, (_, k) => k).filter((k) => !seen.has(k));
  if (missing.length) throw new UserError(`merge: shards ${missing.map((k) => `${k}/${count}`).join(', ')} are missing (got ${partials.length} of ${count})`);
}

/** A shard's render identity without its shard number. */
export function unsharded(id: RenderIdentity): RenderIdentity {
  return id.style === undefined ? { fingerprint: id.fingerprint } : { fingerprint: id.fingerprint, style: id.style };
}

/** Merge partial archives into `output` (written atomically); tiles must not overlap. */
export async function mergeArchives(partials: string[], output: string): Promise<void> {
  if (partials.length === 0) throw new UserError('merge: name at least one partial archive');
  const readers: ArchiveReader[] = [];
  try {
    for (const p of partials) readers.push(await openArchiveFile(p));
    const metas = await Promise.all(readers.map((r) => r.metadata()));
    checkShards(partials, metas.map((m) => m[RENDER_METADATA_KEY] as RenderIdentity | undefined));
    const h0 = readers[0].header;
    readers.forEach((r, i) => {
      if (r.header.tileType !== h0.tileType || r.header.tileCompression !== h0.tileCompression) {
        throw new UserError(`${partials[i]}: tile type/compression differ from ${partials[0]}`);
      }
    });
    const metadata = { ...metas[0] };
    const id = metadata[RENDER_METADATA_KEY] as RenderIdentity | undefined;
    // The identity of an unsharded render (fingerprint, then style: the key order a one-machine build
    // writes), so the merged archive is byte-identical to it and the next incremental build reuses it.
    if (id) metadata[RENDER_METADATA_KEY] = unsharded(id);
    const w = await PMTilesWriter.create(output, writerOptionsOf(h0, metadata));
    try {
      for (const [i, r] of readers.entries()) {
        for await (const e of r.entries()) {
          const bytes = await r.readRange(e.offset, e.length);
          for (let k = 0; k < e.runLength; k++) {
            try {
              await w.addTileId(e.tileId + k, bytes);
            } catch (err) {
              if ((err as Error).name === 'DuplicateTileError') throw new UserError(`${partials[i]}: tile ${e.z}/${e.x}/${e.y} is also in another partial (overlapping shards)`);
              throw err;
            }
          }
        }
      }
      const res = await w.finish();
      logLine(`merge: ${output}: ${res.addressedTiles} tiles from ${partials.length} partial archives, ${res.bytes} bytes`);
    } catch (e) {
      await w.abort();
      throw e;
    }
  } finally {
    for (const r of readers) await r.close();
  }
}
