/**
 * The OSM objects the search index is made of, read by Debian's osmium: `tags-filter` keeps the
 * objects with a name, a house number or a place tag (and what they reference, so ways and relations
 * keep their geometry), `export` writes them as a GeoJSON sequence (nodes as points, ways as lines,
 * closed ways and multipolygons as areas); this module streams that file back as typed objects.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { UserError } from '../../lib/errors.ts';
import type { OsmType } from '../../lib/search/schema.ts';
import { runTool, ToolError } from '../osm/tools.ts';
import type { Tags } from './classify.ts';
import type { GeoJsonGeometry } from './geometry.ts';

/** One exported object. */
export interface OsmObject {
  /** `n123`, `w45`, `r6`: the OSM element (an area of a closed way is its way, of a multipolygon its relation). */
  key: string;
  osmType: OsmType;
  osmId: number;
  shape: 'point' | 'line' | 'area';
  tags: Tags;
  geometry: GeoJsonGeometry;
}

/** The tags-filter expressions of the objects the index may hold. */
export const SEARCH_TAG_FILTER = ['name', 'addr:housenumber', 'place'];
/** The objects that locate others: places and admin boundaries (what an update checks first). */
export const SETTLEMENT_TAG_FILTER = ['place', 'wr/boundary=administrative'];

/** A failed osmium run on `input` as a one-line UserError. */
function osmiumFailure(e: unknown, input: string): unknown {
  if (!(e instanceof ToolError)) return e;
  const why = e.stderr.split(/[\r\n]+/).map((l) => l.trim()).filter(Boolean)[0] ?? e.message;
  return new UserError(`${input}: not a readable OSM PBF file (osmium: ${why})`, { cause: e });
}

/**
 * Export the objects of `input` matching `filter` (tags-filter expressions; all of them when
 * `filter` is undefined) into `<workDir>/<name>.geojsonseq`; returns its path.
 */
export async function exportObjects(osmium: string, input: string, workDir: string, name: string, filter: readonly string[] | undefined, pidFile: string): Promise<string> {
  const filtered = join(workDir, `${name}.osm.pbf`);
  const out = join(workDir, `${name}.geojsonseq`);
  try {
    if (filter) await runTool(osmium, ['tags-filter', '--no-progress', '-O', '-o', filtered, input, ...filter], { pidFile });
    await runTool(osmium, ['export', '--no-progress', '-O', '-f', 'geojsonseq', '-x', 'print_record_separator=false', '-u', 'type_id', '-o', out, filter ? filtered : input], { pidFile });
  } catch (e) {
    throw osmiumFailure(e, input);
  }
  return out;
}

/** The OSM element of an exported id: `n1`/`w2` as they are, areas `a<2w>` (a way) or `a<2r+1>` (a relation). */
export function elementOf(id: string): { key: string; osmType: OsmType; osmId: number } | undefined {
  const m = /^([nwa])(\d+)$/.exec(id);
  if (!m) return undefined;
  const n = Number(m[2]);
  if (m[1] === 'n') return { key: `n${n}`, osmType: 'N', osmId: n };
  if (m[1] === 'w') return { key: `w${n}`, osmType: 'W', osmId: n };
  return n % 2 === 0 ? { key: `w${n / 2}`, osmType: 'W', osmId: n / 2 } : { key: `r${(n - 1) / 2}`, osmType: 'R', osmId: (n - 1) / 2 };
}

/** The shape of a GeoJSON geometry type. */
function shapeOf(type: string): OsmObject['shape'] | undefined {
  if (type === 'Point') return 'point';
  if (type === 'LineString' || type === 'MultiLineString') return 'line';
  if (type === 'Polygon' || type === 'MultiPolygon') return 'area';
  return undefined;
}

/** The objects of an exported GeoJSON sequence, in file order. */
export async function* readObjects(path: string): AsyncGenerator<OsmObject> {
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const f = JSON.parse(line) as { id?: string; geometry?: GeoJsonGeometry; properties?: Tags };
    const el = f.id ? elementOf(f.id) : undefined;
    const shape = f.geometry && shapeOf(f.geometry.type);
    if (!el || !shape || !f.properties) continue;
    yield { ...el, shape, tags: f.properties, geometry: f.geometry! };
  }
}
