/**
 * The OSM objects the search index is made of, read by Debian's osmium: `export` writes the extract's
 * tagged objects as a GeoJSON sequence (nodes as points, ways as lines, closed ways and multipolygons as
 * areas); this module streams that file back as typed objects, skipping by a look at the line those
 * that cannot be indexed. (`osmium tags-filter` first, keeping what the objects reference, costs
 * several times the export itself: 2.5 s and 570 MB against 0.4 s and 17 MB for Liechtenstein.)
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
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
  /** The geometry as osmium wrote it (GDAL reads it so), and parsed when asked for. */
  geometryJson: string;
  readonly geometry: GeoJsonGeometry;
}

/**
 * A first look at the exported lines: the texts one of which a line holds when its object may be taken
 * (the others are skipped unread: the lines holding them are found by searching the file's bytes).
 */
export type LineFilter = readonly string[];
/** Lines of objects the index may hold (a name, house number or place tag). */
export const MAY_BE_INDEXED: LineFilter = ['"name', '"addr:housenumber"', '"place"'];
/** Lines of objects that may locate others: places and admin boundaries (what an update checks first). */
export const MAY_BE_SETTLEMENT: LineFilter = ['"place"', '"boundary":"administrative"'];

/** A failed osmium run on `input` as a one-line UserError. */
function osmiumFailure(e: unknown, input: string): unknown {
  if (!(e instanceof ToolError)) return e;
  const why = e.stderr.split(/[\r\n]+/).map((l) => l.trim()).filter(Boolean)[0] ?? e.message;
  return new UserError(`${input}: not a readable OSM PBF file (osmium: ${why})`, { cause: e });
}

/** Export the tagged objects of `input` into `<workDir>/<name>.geojsonseq`; returns its path. */
export async function exportObjects(osmium: string, input: string, workDir: string, name: string, pidFile: string): Promise<string> {
  const out = join(workDir, `${name}.geojsonseq`);
  try {
    await runTool(osmium, ['export', '--no-progress', '-O', '-f', 'geojsonseq', '-x', 'print_record_separator=false', '-u', 'type_id', '-o', out, input], { pidFile });
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

/** Where osmium's feature lines put the geometry and the properties (`{"type":"Feature","id":…,"geometry":…,"properties":…}`). */
const GEOMETRY = ',"geometry":';
const PROPERTIES = ',"properties":';
const GEOMETRY_TYPE = /^\{"type":"(\w+)"/;
/** Bytes read at a time from the exported file. */
const READ_CHUNK_BYTES = 1024 * 1024;

/** An object from its parts (the geometry parsed on first use). */
function objectOf(el: NonNullable<ReturnType<typeof elementOf>>, shape: OsmObject['shape'], tags: Tags, geometryJson: string): OsmObject {
  let parsed: GeoJsonGeometry | undefined;
  return {
    ...el, shape, tags, geometryJson,
    get geometry() {
      return (parsed ??= JSON.parse(geometryJson) as GeoJsonGeometry);
    },
  };
}

/**
 * The lines of a file holding one of `texts`, a chunk's lines at a time, in file order: the texts are
 * searched in the bytes (Buffer.indexOf) and only the lines around the hits are decoded, as most
 * exported objects (buildings, land use) are neither named nor numbered.
 */
async function* linesWith(path: string, texts: LineFilter): AsyncGenerator<string[]> {
  const needles = texts.map((t) => Buffer.from(t, 'utf8'));
  let rest: Buffer = Buffer.alloc(0);
  const scan = (data: Buffer): string[] => {
    const starts = new Set<number>();
    for (const needle of needles) {
      for (let at = data.indexOf(needle); at >= 0; at = data.indexOf(needle, at + needle.length)) starts.add(data.lastIndexOf(10, at) + 1);
    }
    return [...starts].sort((a, b) => a - b).map((start) => {
      const end = data.indexOf(10, start);
      return data.toString('utf8', start, end < 0 ? data.length : end);
    });
  };
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    const first = chunk.indexOf(10);
    if (first < 0) {
      rest = Buffer.concat([rest, chunk]);
      continue;
    }
    // The line the last chunk ended in, then this chunk's whole lines (not copied), then its rest.
    const last = chunk.lastIndexOf(10);
    const lines = scan(Buffer.concat([rest, chunk.subarray(0, first + 1)]));
    lines.push(...scan(chunk.subarray(first + 1, last + 1)));
    rest = Buffer.from(chunk.subarray(last + 1));
    yield lines;
  }
  if (rest.length) yield scan(rest);
}

/**
 * The objects of an exported GeoJSON sequence whose line holds one of `keep`'s texts, in file order. Only
 * the id and the properties are parsed: a way's coordinates stay text until someone asks for them.
 */
export async function* readObjects(path: string, keep: LineFilter): AsyncGenerator<OsmObject> {
  for await (const lines of linesWith(path, keep)) {
    for (const line of lines) {
      if (line.trim() === '') continue;
      const g = line.indexOf(GEOMETRY);
      // A `,"properties":` with its quotes unescaped is never inside a string: the last one is the member's.
      const p = line.lastIndexOf(PROPERTIES);
      if (g < 0 || p < g || !line.endsWith('}')) throw new UserError(`${path}: not a line of osmium's GeoJSON sequence: ${line.slice(0, 80)}`);
      const head = JSON.parse(`${line.slice(0, g)}}`) as { id?: string };
      const geometryJson = line.slice(g + GEOMETRY.length, p);
      const el = head.id ? elementOf(head.id) : undefined;
      const type = GEOMETRY_TYPE.exec(geometryJson)?.[1];
      const shape = type && shapeOf(type);
      if (!el || !shape) continue;
      yield objectOf(el, shape, JSON.parse(line.slice(p + PROPERTIES.length, -1)) as Tags, geometryJson);
    }
  }
}
