/** The tiles of a folder's PMTiles archives by hash, for benchmarks that check their variants render the same bytes. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sha256 } from '../lib/hash.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';

/**
 * sha256 of every tile of every `.pmtiles` under `dir` (whose path passes `include`), keyed by path below
 * `dir` (without the build version's `builds/<id>/`, which differs between runs) and tile id.
 */
export async function tileHashes(dir: string, include: (path: string) => boolean = () => true): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string): Promise<void> => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.name.endsWith('.pmtiles') && include(p)) {
        const r = await openArchiveFile(p);
        try {
          for await (const t of r.entries()) {
            const h = sha256(await r.readRange(t.offset, t.length));
            for (let k = 0; k < t.runLength; k++) out.set(`${p.slice(dir.length).replace(/\/builds\/[^/]+\//, '/')}:${t.tileId + k}`, h);
          }
        } finally {
          await r.close();
        }
      }
    }
  };
  await walk(dir);
  return out;
}
