/**
 * An OSM tileset's tiles from their parts, each re-encoded canonically (canonical.ts): the extract's
 * own tiles (tilemaker), the ocean from z6 (ocean.ts: fills and coastal tiles), and the world's tiles
 * at z0–6 (world.ts), merged where the extract's tile box covers them and copied as they are elsewhere.
 * A tile of open sea and nothing else is one canonical tile, encoded once.
 */
import type { RawLayer } from '../../lib/mvt.ts';
import type { BBox } from '../../lib/tile-math.ts';
import type { SourceTile } from '../sources/common.ts';
import { canonicalEncode, decodeStored } from './canonical.ts';
import { fillLayers, worldLayers } from './compose.ts';
import { tileIndex, tileOfIndex } from './cut.ts';
import { NE_MAXZOOM } from './natural-earth.ts';
import type { OceanTiles } from './ocean.ts';
import { WORLD_MAXZOOM, type WorldTiles } from './world.ts';

/** The ocean's attributes (ocean.ts) as a fill. */
const OCEAN_FILL = [{ layer: 'water', attributes: { class: 'ocean' } }];

/** The parts of an OSM tileset's tiles besides the extract's own. */
export interface TileParts {
  /** The extract's tile box. */
  box: BBox;
  /** Whether tile z/x/y is written at all. */
  wanted: (z: number, x: number, y: number) => boolean;
  /** Whether tile z/x/y lies in the extract's tile box (its tiles there are merged with the world's). */
  inBox: (z: number, x: number, y: number) => boolean;
  ocean: OceanTiles;
  world?: WorldTiles;
  /** Natural Earth places inside the box (natural-earth.ts `placesInside`). */
  places: ReadonlySet<string>;
}

/** The tile stream: the extract's tiles merged with the other parts, then the parts' tiles the extract has none of. */
export async function* assembleTiles(extract: AsyncIterable<SourceTile>, p: TileParts): AsyncIterable<SourceTile> {
  const done = new Set<string>();
  let openSea: Uint8Array | undefined;

  /** The parts other than the extract's tile at z/x/y. */
  const others = async (z: number, x: number, y: number): Promise<RawLayer[][]> => {
    const parts: RawLayer[][] = [];
    if (z >= NE_MAXZOOM) {
      const coast = p.ocean.tiles.get(`${z}/${x}/${y}`);
      if (coast) parts.push(coast);
      if (p.ocean.fills.get(z)?.has(tileIndex(z, x, y))) parts.push(fillLayers(OCEAN_FILL));
    }
    if (z <= WORLD_MAXZOOM && p.world) {
      const w = await p.world.get(z, x, y);
      // At z6 the extract's ocean (its sea and Natural Earth's around it) is the world's there.
      if (w) parts.push(worldLayers(decodeStored(w), z, x, y, { box: p.box, places: p.places, ocean: z >= NE_MAXZOOM }));
    }
    return parts;
  };
  const merged = async (z: number, x: number, y: number, own?: Uint8Array): Promise<SourceTile | undefined> => {
    const key = `${z}/${x}/${y}`;
    done.add(key);
    // Open sea and nothing else: one tile for all (canonical bytes do not depend on the place), made once.
    if (!own && z > WORLD_MAXZOOM && !p.ocean.tiles.has(key) && p.ocean.fills.get(z)?.has(tileIndex(z, x, y))) {
      openSea ??= canonicalEncode([fillLayers(OCEAN_FILL)], x, y);
      return { z, x, y, data: openSea! };
    }
    const parts = await others(z, x, y);
    const data = canonicalEncode(own ? [decodeStored(own), ...parts] : parts, x, y);
    return data && { z, x, y, data };
  };

  for await (const t of extract) {
    // tilemaker writes tiles beyond the tile box where the extract's ways run on: not the extract's.
    if (!p.wanted(t.z, t.x, t.y) || !p.inBox(t.z, t.x, t.y)) continue;
    const m = await merged(t.z, t.x, t.y, t.data);
    if (m) yield m;
  }
  for (const [z, fills] of p.ocean.fills) {
    for (const i of fills) {
      const [, x, y] = tileOfIndex(z, i);
      if (done.has(`${z}/${x}/${y}`) || !p.wanted(z, x, y) || !p.inBox(z, x, y)) continue;
      const m = await merged(z, x, y);
      if (m) yield m;
    }
  }
  for (const key of p.ocean.tiles.keys()) {
    const [z, x, y] = key.split('/').map(Number);
    if (done.has(key) || !p.wanted(z, x, y) || !p.inBox(z, x, y)) continue;
    const m = await merged(z, x, y);
    if (m) yield m;
  }
  if (!p.world) return;
  for (let z = 0; z <= WORLD_MAXZOOM; z++) {
    for (let y = 0; y < 2 ** z; y++) {
      for (let x = 0; x < 2 ** z; x++) {
        if (done.has(`${z}/${x}/${y}`) || !p.wanted(z, x, y)) continue;
        if (p.inBox(z, x, y)) {
          const m = await merged(z, x, y);
          if (m) yield m;
          continue;
        }
        // Beyond the extract: the world's tile as it is.
        const data = await p.world.get(z, x, y);
        if (data) yield { z, x, y, data };
      }
    }
  }
}
