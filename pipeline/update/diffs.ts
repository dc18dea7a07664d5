/**
 * The change files between the build's sequence and the server's newest: downloaded into the work
 * folder (temp file + rename, so a file under its final name is whole and verified), checked
 * (sequence numbers without gaps, whole gzip, well-formed OsmChange read by osmium) and counted.
 */
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { produceAtomic } from '../../lib/atomic.ts';
import { sha256 } from '../../lib/hash.ts';
import { UserError } from '../../lib/errors.ts';
import { runTool, ToolError } from '../osm/tools.ts';
import { logLine } from '../../lib/progress.ts';
import { checkGzip, fetchBytes, FetchError, folderUrl, parseState, sequencePath, type ReplicationState } from './replication.ts';

/** Hex characters of the replication URL's hash naming its download folder. */
const DIFFS_KEY_CHARS = 12;

/** One downloaded, verified change file. */
export interface ChangeFile {
  state: ReplicationState;
  /** Local .osc.gz path. */
  path: string;
  /** Nodes, ways and relations it creates, modifies or deletes. */
  changes: number;
}

/** Objects in an OsmChange document (one element per created, modified or deleted object). */
function countChanges(xml: string): number {
  return (xml.match(/<(node|way|relation)[\s/>]/g) ?? []).length;
}

/** Remove temp files a killed run left in `dir`. */
export async function removeTempFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) if (/\.tmp-\d+-[0-9a-f]+$/.test(name)) await rm(join(dir, name), { force: true });
}

/** Download sequence `seq`'s state and change file (unless already here) and verify them. */
async function changeFile(osmium: string, base: string, diffsDir: string, seq: number, after: ReplicationState, gap: (e: unknown) => unknown, pidFile: string): Promise<ChangeFile> {
  const stateUrl = `${folderUrl(base)}${sequencePath(seq)}.state.txt`;
  const oscUrl = `${folderUrl(base)}${sequencePath(seq)}.osc.gz`;
  const statePath = join(diffsDir, `${seq}.state.txt`);
  const path = join(diffsDir, `${seq}.osc.gz`);
  const have = await stat(path).then(() => true, () => false) && await stat(statePath).then(() => true, () => false);
  let state: ReplicationState;
  let bytes: Buffer;
  if (have) {
    state = parseState(await readFile(statePath, 'utf8'), statePath);
    bytes = await readFile(path);
  } else {
    try {
      state = parseState((await fetchBytes(stateUrl)).toString('utf8'), stateUrl);
      bytes = await fetchBytes(oscUrl);
    } catch (e) {
      throw gap(e);
    }
  }
  const where = have ? path : oscUrl;
  if (state.sequence !== seq) throw new UserError(`${have ? statePath : stateUrl}: sequenceNumber=${state.sequence}, expected ${seq} (the sequence is not contiguous)`);
  if (Date.parse(state.timestamp) <= Date.parse(after.timestamp)) {
    throw new UserError(`${have ? statePath : stateUrl}: timestamp ${state.timestamp} is not after sequence ${after.sequence}'s ${after.timestamp} (the sequence is not contiguous)`);
  }
  const xml = checkGzip(bytes, where).toString('utf8');
  if (!have) {
    await produceAtomic(path, async (tmp) => {
      await writeFile(tmp, bytes);
      try {
        // osmium reads the whole document: malformed XML or an OsmChange cut at a gzip member boundary fails here.
        await runTool(osmium, ['fileinfo', '-e', '-F', 'osc.gz', '-g', 'data.count.nodes', tmp], { pidFile });
      } catch (e) {
        if (!(e instanceof ToolError)) throw e;
        throw new UserError(`${oscUrl}: not a readable OsmChange file (osmium: ${e.stderr.trim().split('\n')[0] || e.message})`, { cause: e });
      }
    });
    await produceAtomic(statePath, (tmp) => writeFile(tmp, `sequenceNumber=${state.sequence}\ntimestamp=${state.timestamp.replace(/:/g, '\\:')}\n`));
  }
  return { state, path, changes: countChanges(xml) };
}

/**
 * Download and verify the change files after `from` up to `to.sequence` from replication folder
 * `base` into `diffsDir` (files already there from a killed run are verified and used).
 */
export async function downloadChanges(osmium: string, base: string, dir: string, from: ReplicationState, to: ReplicationState, label: string): Promise<ChangeFile[]> {
  const diffsDir = diffsFolder(dir, base);
  await mkdir(diffsDir, { recursive: true });
  await removeTempFiles(diffsDir);
  const pidFile = join(diffsDir, '.pids');
  const files: ChangeFile[] = [];
  let after = from;
  for (let seq = from.sequence + 1; seq <= to.sequence; seq++) {
    const missing = seq;
    const gap = (e: unknown) =>
      e instanceof FetchError && e.notFound ? new UserError(`${e.message}: sequence ${missing} is missing on the server, which announces ${from.sequence + 1}–${to.sequence} after the build's ${from.sequence} (a gap in the sequence)`, { cause: e }) : e;
    const f = await changeFile(osmium, base, diffsDir, seq, after, gap, pidFile);
    logLine(`${label}: sequence ${seq} (${f.state.timestamp}): ${f.changes} changed objects`);
    files.push(f);
    after = f.state;
  }
  await rm(pidFile, { force: true });
  return files;
}

/** The downloads from replication folder `base`: `<dir>/diffs/<hash of the URL>/` (files from another server are never mixed in). */
export function diffsFolder(dir: string, base: string): string {
  return join(dir, 'diffs', sha256(base).slice(0, DIFFS_KEY_CHARS));
}

/** Remove the change files from `base` up to and including `sequence` (applied and published), and any other server's. */
export async function removeAppliedChanges(dir: string, base: string, sequence: number): Promise<void> {
  const keep = diffsFolder(dir, base);
  for (const name of await readdir(join(dir, 'diffs')).catch(() => [] as string[])) {
    if (join(dir, 'diffs', name) !== keep) await rm(join(dir, 'diffs', name), { recursive: true, force: true });
  }
  for (const name of await readdir(keep).catch(() => [] as string[])) {
    const m = /^(\d+)\.(osc\.gz|state\.txt)$/.exec(name);
    if (m && Number(m[1]) <= sequence) await rm(join(keep, name), { force: true });
  }
}
