/**
 * Render each distinct view once. A metatile's pixels are a function of what its view loads: the
 * source tiles under the view and its margin (viewSourceRange, the rule incremental rebuilds use),
 * their place relative to the view, the zoom, the view's size, the style and the scale. Metatiles
 * whose view key is equal (open sea, forest, desert, ice) are rendered once and the others take that
 * render's pixels. Where the style makes pixels depend on the absolute position, the position is keyed
 * in (positionRule): fill and background patterns are anchored to the world, hillshade shades by the
 * tile's latitude, 3D terrain, a globe, `within`/`distance` expressions and sources that are not a
 * built tileset (inline GeoJSON, images) draw at world coordinates.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256 } from '../../lib/hash.ts';
import type { ArchiveReader } from '../../lib/pmtiles/index.ts';
import { openTilesetArchive, type TilesetArchiveRef } from './archive.ts';
import { metatileKey, TILE_SIZE, type Metatile } from '../../lib/metatiles.ts';
import { viewSourceRange, type SourceGrid } from './selection.ts';

/** How a style's pixels depend on the metatile's absolute position besides the tiles it loads. */
export interface PositionRule {
  /** Key the whole position (no dedup), with why. */
  absolute?: string;
  /** Key the row (latitude), with why. */
  row?: string;
  /** World-anchored patterns repeat every [x, y] CSS px: key the view's offset modulo these. */
  patternPeriod?: [number, number];
}

type Json = Record<string, unknown>;
/** Paint properties whose images are anchored to the world (MapLibre's u_pixel_coord): not line-pattern, which follows the line. */
const WORLD_PATTERNS = ['fill-pattern', 'fill-extrusion-pattern', 'background-pattern'];
/** Expression operators that compare features with fixed world geometry. */
const WORLD_OPERATORS = new Set(['within', 'distance']);
/** Above this pattern period, keying the phase dedups nothing worth the rule: key the position. */
const MAX_PATTERN_PERIOD = 4096;
/** Crossfaded patterns are drawn at up to twice their size between zooms. */
const PATTERN_SCALES = 2;

/** Every string literal in a JSON value, and whether it reads feature data (get, concat, …) that could name any image. */
function literals(v: unknown, out: Set<string>): boolean {
  if (typeof v === 'string') {
    out.add(v);
    return false;
  }
  if (Array.isArray(v)) {
    let data = typeof v[0] === 'string' && ['get', 'properties', 'feature-state', 'concat', 'to-string', 'global-state'].includes(v[0]);
    for (const x of v) data = literals(x, out) || data;
    return data;
  }
  if (v && typeof v === 'object') {
    let data = false;
    for (const x of Object.values(v)) data = literals(x, out) || data;
    return data;
  }
  return false;
}

/** True when an expression anywhere in `v` uses one of `ops`. */
function usesOperator(v: unknown, ops: Set<string>): string | undefined {
  if (Array.isArray(v)) {
    if (typeof v[0] === 'string' && ops.has(v[0])) return v[0];
    for (const x of v) {
      const found = usesOperator(x, ops);
      if (found) return found;
    }
  } else if (v && typeof v === 'object') {
    for (const x of Object.values(v)) {
      const found = usesOperator(x, ops);
      if (found) return found;
    }
  }
  return undefined;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
const lcm = (a: number, b: number) => (a / gcd(a, b)) * b;

/** Sprite image sizes in CSS px (width / pixelRatio) of every sheet beside the prepared style. */
async function spriteSizes(spriteDir: string): Promise<Map<string, number[][]>> {
  const out = new Map<string, number[][]>();
  for (const f of ['sprite.json', 'sprite@2x.json']) {
    const text = await readFile(join(spriteDir, f), 'utf8').catch(() => undefined);
    if (!text) continue;
    for (const [name, img] of Object.entries(JSON.parse(text) as Record<string, { width: number; height: number; pixelRatio?: number }>)) {
      const r = img.pixelRatio ?? 1;
      out.set(name, [...(out.get(name) ?? []), [img.width / r, img.height / r]]);
    }
  }
  return out;
}

/**
 * What of a metatile's absolute position its pixels depend on under `style` (prepared: sources are
 * `tilebake://data/…` tilesets), whose sprites are in `spriteDir`.
 */
export async function positionRule(style: { sources: Record<string, Json>; layers: Json[] } & Json, spriteDir: string): Promise<PositionRule> {
  for (const [id, src] of Object.entries(style.sources)) {
    if (typeof src.url !== 'string' || !src.url.startsWith('tilebake://data/')) return { absolute: `source "${id}" is not a built tileset (${String(src.type)})` };
  }
  const projection = (style.projection as Json | undefined)?.type;
  if (projection !== undefined && projection !== 'mercator') return { absolute: `projection ${JSON.stringify(projection)}` };
  if (style.terrain) return { absolute: '3D terrain' };
  const rule: PositionRule = {};
  const patterns = new Set<string>();
  let anyImage = false;
  for (const l of style.layers) {
    const op = usesOperator([l.filter, l.layout, l.paint], WORLD_OPERATORS);
    if (op) return { absolute: `layer "${String(l.id)}" uses "${op}"` };
    if (l.type === 'hillshade') rule.row ??= `layer "${String(l.id)}" is a hillshade (shaded by latitude)`;
    const paint = (l.paint ?? {}) as Json;
    for (const p of WORLD_PATTERNS) if (paint[p] !== undefined) anyImage = literals(paint[p], patterns) || anyImage;
  }
  if (patterns.size === 0 && !anyImage) return rule;
  const sizes = await spriteSizes(spriteDir);
  const used = anyImage ? [...sizes.keys()] : [...patterns].filter((p) => sizes.has(p));
  let px = 1;
  let py = 1;
  for (const name of used) {
    for (const [w, h] of sizes.get(name)!) {
      if (!Number.isInteger(w) || !Number.isInteger(h)) return { ...rule, absolute: `pattern "${name}" is ${w}×${h} CSS px` };
      px = lcm(px, w * PATTERN_SCALES);
      py = lcm(py, h * PATTERN_SCALES);
    }
  }
  if (px > MAX_PATTERN_PERIOD || py > MAX_PATTERN_PERIOD) return { ...rule, absolute: `patterns repeat only every ${px}×${py} px` };
  return { ...rule, patternPeriod: [px, py] };
}

/** A style source whose tiles a view loads: its grid and its archive (read through its store, as the render reads it). */
export interface KeyedSource {
  grid: SourceGrid;
  archive: TilesetArchiveRef;
}

/** Source tile contents hashed, memoised by stored location (bounded: neighbouring views share tiles). */
const HASH_MEMO = 4096;
/**
 * View keys computed at once: on object storage each new source tile is a ranged read, so keys are
 * computed in parallel (on a local disk this costs nothing).
 */
const KEYS_IN_FLIGHT = 16;

/** Computes view keys for the metatiles of one style × scale. */
export class ViewKeys {
  /** Per source: hash of the stored bytes by location (the promise: concurrent keys read a tile once). */
  private readonly memo: Map<string, Promise<string>>[];

  private constructor(
    private readonly readers: ArchiveReader[],
    private readonly sources: KeyedSource[],
    private readonly base: string,
    private readonly margin: number,
    private readonly rule: PositionRule,
  ) {
    this.memo = readers.map(() => new Map());
  }

  /** Open the sources' archives; `styleKey` names everything else the pixels depend on (style, settings, scale). */
  static async open(sources: KeyedSource[], styleKey: string, margin: number, rule: PositionRule): Promise<ViewKeys> {
    const readers: ArchiveReader[] = [];
    try {
      for (const s of sources) readers.push(await openTilesetArchive(s.archive));
    } catch (e) {
      await Promise.all(readers.map((r) => r.close()));
      throw e;
    }
    return new ViewKeys(readers, sources, styleKey, margin, rule);
  }

  /** SHA-256 of a source tile's stored bytes ('' when absent). */
  private async tileHash(i: number, z: number, x: number, y: number): Promise<string> {
    const loc = await this.readers[i].locateTile(z, x, y);
    if (!loc) return '';
    const id = `${loc.offset}:${loc.length}`;
    const memo = this.memo[i];
    let h = memo.get(id);
    if (h === undefined) {
      h = this.readers[i].readRange(loc.offset, loc.length).then((bytes) => sha256(bytes, 'base64'));
      if (memo.size >= HASH_MEMO) memo.delete(memo.keys().next().value!);
      memo.set(id, h);
      // A failed read is not remembered (the key fails; a later one may read again).
      h.catch(() => memo.get(id) === h && memo.delete(id));
    }
    return h;
  }

  /** The view key of `m`: equal keys ⇒ equal pixels. */
  async key(m: Metatile): Promise<string> {
    const h = createHash('sha256').update(this.base).update(JSON.stringify([m.z, m.area.w, m.area.h]));
    const { x, y } = m.area;
    let absolute = this.rule.absolute !== undefined;
    const parts: unknown[] = [];
    for (const [i, s] of this.sources.entries()) {
      const r = viewSourceRange(m, this.margin, s.grid);
      if (!r) {
        parts.push(null);
        continue;
      }
      // A view that wraps around the antimeridian or reaches past a pole: keyed by its position.
      if (r.x0 < 0 || r.x1 >= r.n || r.y0 < 0 || r.y1 >= r.n) absolute = true;
      const scale = 2 ** (r.z - m.z);
      // Where the view lies on the source's tile grid (exact: scale is a power of two).
      const hashes: Promise<string>[] = [];
      for (let ty = Math.max(0, r.y0); ty <= Math.min(r.n - 1, r.y1); ty++) {
        for (let tx = Math.max(0, r.x0); tx <= Math.min(r.n - 1, r.x1); tx++) hashes.push(this.tileHash(i, r.z, tx, ty));
      }
      const tiles = await Promise.all(hashes);
      parts.push([r.z, x * scale - r.x0, y * scale - r.y0, r.x1 - r.x0, r.y1 - r.y0, tiles]);
    }
    if (absolute) parts.push(['at', metatileKey(m)]);
    if (this.rule.row) parts.push(['row', y]);
    const p = this.rule.patternPeriod;
    if (p) parts.push(['pattern', (x * TILE_SIZE) % p[0], (y * TILE_SIZE) % p[1]]);
    return h.update(JSON.stringify(parts)).digest('base64');
  }

  async close(): Promise<void> {
    await Promise.all(this.readers.map((r) => r.close()));
  }
}

/** Metatiles grouped by view: each group's first metatile is rendered, the others take its pixels. */
export interface ViewGroups {
  /** The metatiles to render, in the order given. */
  render: Metatile[];
  /** Per rendered metatile: the metatiles that take its pixels. */
  copies: Map<Metatile, Metatile[]>;
}

/** Group `metas` (in render order) by view key; the first of each group is the one rendered. */
export async function groupViews(metas: Metatile[], keys: ViewKeys): Promise<ViewGroups> {
  const first = new Map<string, Metatile>();
  const render: Metatile[] = [];
  const copies = new Map<Metatile, Metatile[]>();
  // Keys are computed KEYS_IN_FLIGHT at a time and grouped in order: the grouping does not depend on timing.
  const keyed: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < metas.length) {
      const i = next++;
      keyed[i] = await keys.key(metas[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(KEYS_IN_FLIGHT, metas.length) }, lane));
  for (const [i, m] of metas.entries()) {
    const k = keyed[i];
    const rep = first.get(k);
    if (!rep) {
      first.set(k, m);
      render.push(m);
      continue;
    }
    const list = copies.get(rep);
    if (list) list.push(m);
    else copies.set(rep, [m]);
  }
  return { render, copies };
}

/** The rule in a few words, for the build's log. */
export function describeRule(rule: PositionRule): string {
  if (rule.absolute) return `views keyed by position: ${rule.absolute}`;
  const extra = [rule.row && `row keyed: ${rule.row}`, rule.patternPeriod && `pattern phase keyed modulo ${rule.patternPeriod.join('×')} px`].filter(Boolean);
  return `views keyed by the tiles under them${extra.length ? `; ${extra.join('; ')}` : ''}`;
}
