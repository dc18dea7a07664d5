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
import { discard } from '../../lib/storage.ts';
import { guardedRead, HttpStatusError, type ReadPolicy, type StoreError } from '../../lib/store-read.ts';

/** A replication state: a sequence number and the time of the data it brings the extract to. */
export interface ReplicationState {
  sequence: number;
  /** ISO time (`2019-11-19T21:18:02Z`). */
  timestamp: string;
}

/**
 * Downloads over HTTP(S): the deadline of one download, its retries included (a daily diff of a large
 * region is a few MB), and the retries after a transient failure, which lib/store-read.ts decides
 * (connection errors, HTTP 5xx, 429, 408), with its exponential backoff and jitter.
 */
export const REPLICATION_READ_POLICY: Readonly<ReadPolicy> = Object.freeze({ timeoutMs: 360_000, retries: 2, backoffMs: 1000 });
const HTTP_NOT_FOUND = 404;

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

/** A download that failed: the message names the URL and why; `notFound` for a 404 (or a missing file). */
export class FetchError extends UserError {
  constructor(readonly url: string, message: string, readonly notFound: boolean, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/**
 * The bytes at `url` (https://, http:// or file://). HTTP downloads go through `guardedRead`: one
 * deadline, transient failures retried with backoff, anything else (404, 403...) failing at once.
 */
export async function fetchBytes(url: string, policy: ReadPolicy = REPLICATION_READ_POLICY): Promise<Buffer> {
  if (url.startsWith('file:')) {
    try {
      return await readFile(fileURLToPath(url));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new FetchError(url, `${url}: ${code === 'ENOENT' ? 'not found (no such file)' : `cannot read (${code ?? String(e)})`}`, code === 'ENOENT');
    }
  }
  let attempts = 0;
  try {
    return await guardedRead(
      () => url,
      policy,
      async (signal) => {
        const res = await fetch(url, { signal, headers: { 'user-agent': 'tilebake-update' } });
        if (!res.ok) {
          await discard(res);
          throw new HttpStatusError(res.status, `HTTP ${res.status} ${res.statusText}`);
        }
        return Buffer.from(await res.arrayBuffer());
      },
      (outcome) => (attempts = outcome.attempts),
    );
  } catch (e) {
    // guardedRead throws StoreErrors only; a timeout's message already counts its attempts.
    const err = e as StoreError;
    const status = err.cause instanceof HttpStatusError ? err.cause.status : undefined;
    const tries = attempts > 1 && err.kind !== 'timeout' ? ` (${attempts} attempts)` : '';
    throw new FetchError(url, `${err.message}${tries}`, status === HTTP_NOT_FOUND, err);
  }
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
