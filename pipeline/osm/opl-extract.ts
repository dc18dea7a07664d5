/**
 * An OSM extract read once as OPL, for the small extracts of osm/changed-tiles.ts: the parents of
 * objects (ways of a node, relations of a member) and the objects an object references, recursively
 * (a way's nodes, a relation's members), as `osmium getparents` and `osmium getid -r` find them, without
 * running osmium per round. osmium 1.15 marks ids in dense bit sets over the whole id range: ~0.6 GB per
 * `getid -r` on an extract whose node ids reach 6.9·10⁹, and 0.1–0.15 s per `getparents` round.
 * Only ways and relations are indexed; the nodes a small extract needs are picked in one scan.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { runTool } from './tools.ts';

/** One extract as OPL without metadata (tilemaker reads none): ways and relations indexed, nodes as text. */
export interface OplExtract {
  /** The whole OPL text; its nodes come first (osmium writes nodes, ways, relations), up to `nodesEnd`. */
  text: string;
  nodesEnd: number;
  /** OPL line of each way and relation by typed id (`w2`, `r3`), in file order. */
  lines: Map<string, string>;
  /** Typed ids each way (its nodes) and relation (its members) references, in order. */
  refs: Map<string, string[]>;
}

/** The list of a way's ` N…` or a relation's ` M…` field, as typed ids. */
function refsOf(line: string, kind: string): string[] {
  const field = line.indexOf(kind === 'w' ? ' N' : ' M');
  if (field < 0) return [];
  const end = line.indexOf(' ', field + 2);
  const list = line.slice(field + 2, end < 0 ? undefined : end);
  if (!list) return [];
  // A way's nodes are `n1,n2` (no locations: not asked for); a relation's members `n1@role,w2@`, roles
  // %-escaped (no `,` or `@` inside one).
  return kind === 'w' ? list.split(',') : list.split(',').map((m) => m.slice(0, m.indexOf('@')));
}

/** Read `file` (any format osmium reads) through the OPL file `opl`. */
export async function readOplExtract(osmium: string, file: string, opl: string, pidFile?: string): Promise<OplExtract> {
  await runTool(osmium, ['cat', '--no-progress', '-O', '-f', 'opl,add_metadata=false', '-o', opl, file], { pidFile });
  const text = await readFile(opl, 'utf8');
  /** Where the first line of type `c` starts (Infinity: none). */
  const first = (c: string) => (text.startsWith(c) ? 0 : text.indexOf(`\n${c}`) + 1 || Number.POSITIVE_INFINITY);
  const nodesEnd = Math.min(first('w'), first('r'), text.length);
  const lines = new Map<string, string>();
  const refs = new Map<string, string[]>();
  for (let pos = nodesEnd; pos < text.length; ) {
    const nl = text.indexOf('\n', pos);
    const line = text.slice(pos, nl < 0 ? text.length : nl);
    pos = nl < 0 ? text.length : nl + 1;
    const space = line.indexOf(' ');
    if (space < 0) continue;
    const id = line.slice(0, space);
    lines.set(id, line);
    refs.set(id, refsOf(line, id[0]));
  }
  return { text, nodesEnd, lines, refs };
}

/** The ways and relations of the extracts `xs` that reference one of `ids` (one round of `osmium getparents`). */
export function parentsOf(xs: OplExtract[], ids: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const x of xs) for (const [id, rs] of x.refs) if (rs.some((r) => ids.has(r))) out.add(id);
  return out;
}

/**
 * OPL lines of the objects of `ids` that `x` holds, with everything they reference, recursively, as far
 * as `x` holds it (`osmium getid -r`), in file order.
 */
export function withReferenced(x: OplExtract, ids: Iterable<string>): string[] {
  const kept = new Set<string>();
  const nodes = new Set<string>();
  const todo = [...ids];
  while (todo.length > 0) {
    const id = todo.pop()!;
    if (id[0] === 'n') nodes.add(id);
    else if (!kept.has(id) && x.lines.has(id)) {
      kept.add(id);
      todo.push(...x.refs.get(id)!);
    }
  }
  const out: string[] = [];
  for (let pos = 0; pos < x.nodesEnd; ) {
    const nl = x.text.indexOf('\n', pos);
    const end = nl < 0 || nl > x.nodesEnd ? x.nodesEnd : nl;
    if (nodes.has(x.text.slice(pos, x.text.indexOf(' ', pos)))) out.push(x.text.slice(pos, end));
    pos = end + 1;
  }
  for (const [id, line] of x.lines) if (kept.has(id)) out.push(line);
  return out;
}

/** True when one of the OPL `lines` is a way tagged natural=coastline. */
export function hasCoastline(lines: string[]): boolean {
  return lines.some((line) => {
    if (line[0] !== 'w') return false;
    const t = line.indexOf(' T');
    if (t < 0) return false;
    const end = line.indexOf(' ', t + 2);
    return line.slice(t + 2, end < 0 ? undefined : end).split(',').includes('natural=coastline');
  });
}

/** Write OPL `lines` to the PBF file `output` (through `output`.opl). */
export async function writeOplPbf(osmium: string, lines: string[], output: string, pidFile?: string): Promise<void> {
  const opl = `${output}.opl`;
  await writeFile(opl, `${lines.join('\n')}\n`);
  await runTool(osmium, ['cat', '--no-progress', '-O', '-o', output, opl], { pidFile });
}
