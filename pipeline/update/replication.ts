/**
 * An osmosis-style replication folder (Geofabrik's `<region>-updates/`, planet.openstreetmap.org's
 * `replication/day/`), over https:// or file://: `state.txt` names the newest sequence number and its
 * time; sequence N's change file is `AAA/BBB/CCC.osc.gz` with its own `AAA/BBB/CCC.state.txt`.
 * https://wiki.openstreetmap.org/wiki/Planet.osm/diffs
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { UserError } from '../../lib/errors.ts';

/** A replication state: a sequence number and the time of the data it brings the extract to. */
export interface ReplicationState {
  sequence: number;
  /** ISO time (`2019-11-19T21:18:02Z`). */
  timestamp: string;
}

/** Downloads: deadline of one (a daily diff of a large region is a few MB), retries after a connection error or a 5xx answer. */
const FETCH = { timeoutMs: 120_000, retries: 2, retryDelayMs: 1000 } as const;
const HTTP = { notFound: 404, serverError: 500 } as const;

/** The folder URL with one trailing slash. */
export function folderUrl(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}

/** `000/002/435` for sequence 2435. */
export function sequencePath(sequence: number): string {
  const s = String(sequence).padStart(9, '0');
  return `${s.slice(0, 3)}/${s.slice(3, 6)}/${s.slice(6)}`;
}

/** Parse a state.txt (Java properties: `key=value`, `\:` escapes, `#` comments); `where` names it in errors. */
export function parseState(text: string, where: string): ReplicationState {
  const props = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf('=');
    if (i < 0) continue;
    props.set(line.slice(0, i).trim(), line.slice(i + 1).trim().replace(/\\(.)/g, '$1'));
  }
  const seq = props.get('sequenceNumber');
  const time = props.get('timestamp');
  if (seq === undefined || !/^\d+$/.test(seq)) throw new UserError(`${where}: not a replication state file (no "sequenceNumber=<integer>" line)`);
  if (time === undefined || Number.isNaN(Date.parse(time))) throw new UserError(`${where}: not a replication state file (no valid "timestamp=" line)`);
  return { sequence: Number(seq), timestamp: new Date(time).toISOString().replace('.000Z', 'Z') };
}

/** A download that failed: the URL and why; `notFound` for a 404 (or a missing file). */
export class FetchError extends UserError {
  constructor(readonly url: string, readonly why: string, readonly notFound: boolean) {
    super(`${url}: ${why}`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bytes at `url` (https://, http:// or file://); retried on connection errors and 5xx. */
export async function fetchBytes(url: string): Promise<Buffer> {
  if (url.startsWith('file:')) {
    try {
      return await readFile(fileURLToPath(url));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new FetchError(url, code === 'ENOENT' ? 'not found (no such file)' : `cannot read (${code ?? String(e)})`, code === 'ENOENT');
    }
  }
  let last = '';
  for (let attempt = 0; attempt <= FETCH.retries; attempt++) {
    if (attempt > 0) await sleep(FETCH.retryDelayMs * attempt);
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(FETCH.timeoutMs), headers: { 'user-agent': 'tilebake-update' } });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      last = `cannot connect (${cause ?? (e as Error).message})`;
      continue;
    }
    if (res.status === HTTP.notFound) throw new FetchError(url, 'HTTP 404 Not Found', true);
    if (res.status >= HTTP.serverError) {
      last = `HTTP ${res.status} ${res.statusText}`;
      continue;
    }
    if (!res.ok) throw new FetchError(url, `HTTP ${res.status} ${res.statusText}`, false);
    try {
      return Buffer.from(await res.arrayBuffer());
    } catch (e) {
      last = `download interrupted (${(e as Error).message})`;
    }
  }
  throw new FetchError(url, `${last} after ${FETCH.retries + 1} attempts`, false);
}

/** Read a replication state file at `url`. */
export async function fetchState(url: string): Promise<ReplicationState> {
  return parseState((await fetchBytes(url)).toString('utf8'), url);
}

/** Check that `bytes` is a whole gzip stream (a truncated or corrupt download fails here); throws naming `where`. */
export function checkGzip(bytes: Buffer, where: string): Buffer {
  try {
    return gunzipSync(bytes);
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'Z_BUF_ERROR' ? 'truncated (the gzip stream ends early)' : `corrupt (${(e as Error).message})`;
    throw new UserError(`${where}: ${why}`, { cause: e });
  }
}
