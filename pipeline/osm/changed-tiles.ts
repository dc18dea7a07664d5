/**
 * Which generated tiles a set of OsmChange files can change, found by generating the changed objects
 * alone, before and after the change, and comparing the two tile by tile.
 *
 * A tile's features are the profile's output for the objects it shows, each object processed on its
 * own (tags, geometry, parent relations' tags); the tile is then re-encoded per tile (canonical.ts).
 * So a tile changes only where the output of an object whose inputs changed differs. Those objects are
 * the changed ones and, recursively, their parents (ways of a moved node, relations of a changed
 * member, relations of those); `osmium getparents` finds them in the extract before and after, and
 * `osmium getid -r` writes them with everything they reference (the members of a changed route or
 * boundary relation too, whose attributes come from it) into a small extract. tilemaker runs with the
 * profile over the "before" and the "after" small extracts over the extract's tile box; the tiles whose
 * features differ (compared with the `_…` instructions kept, so a changed label order counts) are the
 * changed tiles. A change of the coastline changes the sea of every tile: `undefined` then (generate all).
 * When the two small extracts hold the same objects as tilemaker reads them (asTilemakerReads: a long
 * route or border whose change lies beyond the extract, a change of metadata only), tilemaker is not run:
 * the same input gives the same tiles.
 *
 * tilemaker 2.2 spends a fixed ~3 s of CPU on any run that writes z0–2 tiles (it looks up every z14
 * tile under each of them: 4^14 under z0), so the small runs start at z3 (measured: the same tiles at
 * z3–14 as a run from z0). An object shown at z0–2 is shown at z3 too (the profile only sets minimum
 * zooms), so z0–2 tiles count as changed whenever either run has a z3 tile there.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BBox } from '../../lib/tile-math.ts';
import { openMbtiles } from '../sources/mbtiles.ts';
import { comparableTile } from './canonical.ts';
import { runTilemaker } from './tilemaker.ts';
import { runTool, ToolError } from './tools.ts';
import { logLine, secondsSince, stepsText, timeStep, type Step } from '../../lib/progress.ts';

/** What `changedTiles` compares. */
export interface ChangedTilesJob {
  osmium: string;
  tilemaker: string;
  /** The extract before and after the change. */
  before: string;
  after: string;
  /** The OsmChange files (`.osc`, `.osc.gz`) that turn `before` into `after`. */
  changes: string[];
  /** The extract's tile box (as the full run has it). */
  box: BBox;
  /** Which tiles the full run keeps. */
  keep: (z: number, x: number, y: number) => boolean;
  workDir: string;
  pidFile: string;
  label: string;
  /** The `name:xx` languages the full run writes. */
  languages: readonly string[];
  /** Run tilemaker over both small extracts even when they hold the same objects for it (tests compare the two ways). */
  alwaysGenerate?: boolean;
}

/** The first zoom of the small runs (see the module comment). */
const FIRST_ZOOM = 3;
const MAX_ZOOM = 14;

/** Rounds of `getparents` at most (node → way → relation → parent relation …). */
const MAX_PARENT_ROUNDS = 8;

/** The typed ids (`n1`, `w2`, `r3`) of the objects in OPL text. */
function oplIds(opl: string): Set<string> {
  const ids = new Set<string>();
  for (const line of opl.split('\n')) {
    const m = /^([nwr]-?\d+) /.exec(line);
    if (m) ids.add(m[1]);
  }
  return ids;
}

/** The objects of `ids` found in `file` and their parents in it (one level). */
async function withParents(job: ChangedObjectsJob, file: string, ids: Set<string>, idFile: string): Promise<Set<string>> {
  await writeFile(idFile, [...ids].join('\n') + '\n');
  return oplIds(await runTool(job.osmium, ['getparents', '--no-progress', '-s', '-i', idFile, '-f', 'opl', '-o', '-', file], { pidFile: job.pidFile }));
}

/** A small extract that holds coastline (the sea of every tile may change). */
const COAST = Symbol('coastline');

/**
 * Write `<workDir>/<which>.osm.pbf`: the objects `ids` of `file` with everything they reference
 * (osmium getid -r); its path, null for no ids.
 */
export async function extractObjects(job: Pick<ChangedObjectsJob, 'osmium' | 'workDir' | 'pidFile'>, which: string, file: string, ids: ReadonlySet<string>): Promise<string | null> {
  if (ids.size === 0) return null;
  const idFile = join(job.workDir, `${which}.ids`);
  const small = join(job.workDir, `${which}.osm.pbf`);
  await writeFile(idFile, [...ids].join('\n') + '\n');
  try {
    await runTool(job.osmium, ['getid', '--no-progress', '-r', '-O', '-i', idFile, '-o', small, file], { pidFile: job.pidFile });
  } catch (e) {
    // Exit code 1 without a message: some referenced objects are not in the extract (members of a
    // relation beyond its edge), as in the full run; everything else is a failure.
    if (!(e instanceof ToolError && e.code === 1 && !e.stderr.trim())) throw e;
  }
  return small;
}

/** Write the small extract of `ids` in `file` (with everything they reference); its path, null for no ids, or COAST. */
async function smallExtract(job: ChangedTilesJob, which: string, file: string, ids: Set<string>): Promise<string | null | typeof COAST> {
  const small = await extractObjects(job, which, file, ids);
  if (small === null) return null;
  const coast = await runTool(job.osmium, ['tags-filter', '--no-progress', '-R', '-f', 'opl', '-o', '-', small, 'w/natural=coastline'], { pidFile: job.pidFile });
  return coast.trim() ? COAST : small;
}

/**
 * The objects of a small extract as tilemaker reads them: OPL without metadata (version, time, user:
 * tilemaker does not read them), each relation's members that the file lacks (beyond the extract's
 * edge) collapsed into one `?` per run, in place: a member that is not there adds nothing to any
 * tile wherever tilemaker skips it, only the gap it leaves can count.
 */
export async function asTilemakerReads(osmium: string, file: string, pidFile?: string): Promise<string> {
  const lines = (await runTool(osmium, ['cat', '--no-progress', '-f', 'opl,add_metadata=false', '-o', '-', file], { pidFile })).split('\n');
  const present = new Set(lines.map((l) => l.slice(0, l.indexOf(' '))));
  return lines
    .map((line) =>
      line.replace(/ M(\S*)/, (_, list: string) => {
        const members: string[] = [];
        for (const m of list ? list.split(',') : []) {
          if (present.has(m.slice(0, m.indexOf('@')))) members.push(m);
          else if (members[members.length - 1] !== '?') members.push('?');
        }
        return ` M${members.join(',')}`;
      }),
    )
    .join('\n');
}

/** Generate a small extract over the tile box; resolves with its tiles by key (none for null). */
async function generate(job: ChangedTilesJob, which: string, small: string | null): Promise<Map<string, Uint8Array>> {
  const tiles = new Map<string, Uint8Array>();
  if (small === null) return tiles;
  const output = join(job.workDir, `${which}.mbtiles`);
  await runTilemaker(job.tilemaker, { input: small, output, box: job.box, zooms: [FIRST_ZOOM, MAX_ZOOM], languages: job.languages, workDir: job.workDir, pidFile: job.pidFile, label: `${job.label} ${which}` });
  let source;
  try {
    source = await openMbtiles(output);
  } catch {
    return tiles; // the objects show in no layer
  }
  try {
    for await (const t of source.tiles()) {
      const features = comparableTile(t.data);
      // tilemaker writes a tile over any object, also where none shows at that zoom.
      if (features.length > 0 && job.keep(t.z, t.x, t.y)) tiles.set(`${t.z}/${t.x}/${t.y}`, features);
    }
  } finally {
    await source.close();
  }
  return tiles;
}

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined) => a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b));

/** What `changedObjects` needs of a job. */
export type ChangedObjectsJob = Pick<ChangedTilesJob, 'osmium' | 'before' | 'after' | 'changes' | 'workDir' | 'pidFile'>;

/** The objects a change touches: the changed ones and their parents (recursively), as typed ids (`n1`, `w2`, `r3`) in each extract. */
export interface ChangedObjects {
  /** The changed objects themselves. */
  changed: Set<string>;
  /** Those objects and their parents as the extract before the change holds them, and after. */
  inBefore: Set<string>;
  inAfter: Set<string>;
  steps: Step[];
}

/**
 * The objects the change files touch (see the module comment), found with `osmium getparents` in the
 * extract before and after until no new parent turns up; undefined when parents nest deeper than any
 * real data. `job.workDir` must exist.
 */
export async function changedObjects(job: ChangedObjectsJob): Promise<ChangedObjects | undefined> {
  const changed = oplIds(await runTool(job.osmium, ['cat', '--no-progress', '-f', 'opl', '-o', '-', ...job.changes], { pidFile: job.pidFile }));
  const steps: Step[] = [];
  if (changed.size === 0) return { changed, inBefore: new Set(), inAfter: new Set(), steps };
  // Parents in either state: a way that lost a node is a parent only before, one that gained it only after.
  // Until no new parent turns up; then `inBefore`/`inAfter` are the objects of the set each extract holds.
  let ids = changed;
  const t = performance.now();
  for (let round = 0; ; round++) {
    if (round === MAX_PARENT_ROUNDS) return undefined;
    const [inBefore, inAfter] = await Promise.all([withParents(job, job.before, ids, join(job.workDir, 'before-parents.ids')), withParents(job, job.after, ids, join(job.workDir, 'after-parents.ids'))]);
    const next = new Set([...ids, ...inBefore, ...inAfter]);
    if (next.size === ids.size) {
      steps.push({ name: `parents (${round + 1} rounds)`, seconds: secondsSince(t) });
      return { changed, inBefore, inAfter, steps };
    }
    ids = next;
  }
}

/** The `z/x/y` keys of the tiles the change files can change (see the module comment); undefined: every tile. */
export async function changedTiles(job: ChangedTilesJob): Promise<Set<string> | undefined> {
  await rm(job.workDir, { recursive: true, force: true });
  await mkdir(job.workDir, { recursive: true });
  try {
    const objects = await changedObjects(job);
    if (!objects) return undefined; // parents nested deeper than any real data: generate all
    if (objects.changed.size === 0) return new Set();
    const { inBefore, inAfter, steps } = objects;
    const log = () => logLine(`${job.label}: ${stepsText(steps)}`);
    const [smallBefore, smallAfter] = await timeStep(steps, 'small extracts', () => Promise.all([smallExtract(job, 'before', job.before, inBefore), smallExtract(job, 'after', job.after, inAfter)]));
    if (smallBefore === COAST || smallAfter === COAST) return undefined;
    // The same objects for tilemaker before and after (a long route or border that changed only
    // beyond the extract, or only in metadata): the same tiles, without running tilemaker twice.
    if (!job.alwaysGenerate && smallBefore && smallAfter) {
      const [a, b] = await timeStep(steps, 'objects compared', () => Promise.all([asTilemakerReads(job.osmium, smallBefore, job.pidFile), asTilemakerReads(job.osmium, smallAfter, job.pidFile)]));
      if (a === b) {
        log();
        return new Set();
      }
    }
    const [before, after] = await timeStep(steps, 'tilemaker before and after', () => Promise.all([generate(job, 'before', smallBefore), generate(job, 'after', smallAfter)]));
    log();
    const keys = new Set<string>();
    for (const k of new Set([...before.keys(), ...after.keys()])) {
      if (!sameBytes(before.get(k), after.get(k))) keys.add(k);
      const [z, x, y] = k.split('/').map(Number);
      // The tiles above a z3 tile either run shows something in (see the module comment).
      if (z === FIRST_ZOOM) for (let up = 1; up <= FIRST_ZOOM; up++) if (job.keep(z - up, x >> up, y >> up)) keys.add(`${z - up}/${x >> up}/${y >> up}`);
    }
    return keys;
  } finally {
    await rm(job.workDir, { recursive: true, force: true });
  }
}
