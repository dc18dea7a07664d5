// Units of `tilebake update`: replication state files and paths, the extract header's replication
// fields, putting the bbox back into an osmium-written header, gzip checks, and /health's data age.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { UserError } from '../lib/errors.ts';
import { DEFAULT_LANGUAGES } from '../lib/languages.ts';
import { emptyManifest, setOsmState } from '../lib/manifest.ts';
import { asTilemakerReads, changedTiles } from '../pipeline/osm/changed-tiles.ts';
import { copyWithHeaderBBox } from '../pipeline/osm/pbf-bounds.ts';
import { inTileBox, tileBox } from '../pipeline/osm/source.ts';
import { osmDataState, readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { checkGzip, fetchBytes, FetchError, parseState, sequencePath } from '../pipeline/update/replication.ts';
import { dataAge } from '../static-server/data-age.ts';
import { tempDir } from './render-helpers.ts';
import { fileUrl, fixtureFile, LIECHTENSTEIN, MONACO, referenceExtract } from './update-helpers.ts';

const messageOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return (e as Error).message;
  }
  throw new Error('expected a UserError');
};

describe('replication state files and paths', () => {
  it('reads Geofabrik state files (escaped colons, comments, no final newline)', async () => {
    const text = await readFile(fixtureFile(LIECHTENSTEIN, 2435, 'state.txt'), 'utf8');
    expect(text.endsWith('\n')).toBe(false);
    expect(parseState(text, 'x')).toEqual({ sequence: 2435, timestamp: '2019-11-19T21:18:02Z' });
    expect(parseState('#c\r\nsequenceNumber=3076\r\ntimestamp=2021-08-30T20\\:21\\:43Z\r\n', 'x')).toEqual({ sequence: 3076, timestamp: '2021-08-30T20:21:43Z' });
  });

  it('names the file of a state that is not one', () => {
    expect(messageOf(() => parseState('<html>404</html>', 'https://h/state.txt'))).toBe('https://h/state.txt: not a replication state file (no "sequenceNumber=<integer>" line)');
    expect(messageOf(() => parseState('sequenceNumber=5\ntimestamp=soon', 'f'))).toMatch(/^f: .*no valid "timestamp="/);
  });

  it('sequence N is AAA/BBB/CCC', () => {
    expect(sequencePath(2435)).toBe('000/002/435');
    expect(sequencePath(4693877)).toBe('004/693/877');
  });

  it('file:// reads and names a missing file as not found', async () => {
    const url = fileUrl(LIECHTENSTEIN.replication);
    expect((await fetchBytes(`${url}state.txt`)).toString()).toContain('sequenceNumber=2437');
    await expect(fetchBytes(`${url}000/009/999.osc.gz`)).rejects.toMatchObject({ notFound: true, message: `${url}000/009/999.osc.gz: not found (no such file)` });
  });

  it('HTTP: 429, 408 and 503 are retried (lib/store-read.ts\'s transient rule); 404 and 403 fail at once; the last failure names the URL and the attempts', async () => {
    const state = await readFile(fixtureFile(LIECHTENSTEIN, 2435, 'state.txt'));
    // What a replication server answers to each path, request after request.
    const answers: Record<string, number[]> = { '/429': [429, 200], '/408': [408, 200], '/503': [503, 503, 200], '/busy': [503, 503, 503, 200], '/404': [404, 200], '/403': [403, 200] };
    const asked: Record<string, number> = {};
    const server = createServer((req, res) => {
      const n = asked[req.url!] = (asked[req.url!] ?? 0) + 1;
      const status = answers[req.url!]?.[n - 1] ?? 500;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? state : 'not now');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const policy = { timeoutMs: 10_000, retries: 2, backoffMs: 20 };
    const failure = (path: string) => fetchBytes(`${base}${path}`, policy).then(() => expect.unreachable(), (e: unknown) => e as FetchError);
    try {
      for (const path of ['/429', '/408', '/503']) expect(await fetchBytes(`${base}${path}`, policy)).toEqual(state);
      expect(asked).toEqual({ '/429': 2, '/408': 2, '/503': 3 });
      const busy = await failure('/busy');
      expect(busy).toBeInstanceOf(FetchError);
      expect(busy).toMatchObject({ notFound: false, message: `${base}/busy: HTTP 503 Service Unavailable (3 attempts)` });
      expect(await failure('/404')).toMatchObject({ notFound: true, message: `${base}/404: HTTP 404 Not Found` });
      expect(await failure('/403')).toMatchObject({ notFound: false, message: `${base}/403: HTTP 403 Forbidden` });
      expect(asked).toMatchObject({ '/busy': 3, '/404': 1, '/403': 1 });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('a truncated or corrupt gzip stream is named as such', async () => {
    const bytes = await readFile(fixtureFile(LIECHTENSTEIN, 2435, 'osc.gz'));
    expect(checkGzip(bytes, 'f').toString()).toContain('<osmChange');
    expect(messageOf(() => checkGzip(bytes.subarray(0, 1000), 'u'))).toBe('u: truncated (the gzip stream ends early)');
    const bad = Buffer.from(gzipSync('<osmChange/>'));
    bad[bad.length - 6] ^= 0xff; // the CRC
    expect(messageOf(() => checkGzip(bad, 'u'))).toMatch(/^u: corrupt \(/);
  });
});

describe('the extract header', () => {
  it('reads the replication fields (32–34) and records them as the tileset\'s OSM state', async () => {
    expect((await readOsmHeader(MONACO.extract)).replication).toEqual({ sequence: 3047, timestamp: '2021-08-01T20:21:40Z', baseUrl: 'http://download.geofabrik.de/europe/monaco-updates' });
    expect(await osmDataState(LIECHTENSTEIN.extract)).toEqual({ sequence: 2434, timestamp: '2019-11-18T21:19:02Z', replication: 'http://download.geofabrik.de/europe/liechtenstein-updates' });
    expect((await osmDataState(LIECHTENSTEIN.extract, 'file:///mirror/'))?.replication).toBe('file:///mirror/');
    expect(await osmDataState(fixtureFile(LIECHTENSTEIN, 2435, 'state.txt'))).toBeUndefined();
  });

  it('puts the bbox back into an osmium apply-changes output; the data blocks are unchanged', async () => {
    const dir = await tempDir('pbf-bounds');
    try {
      const applied = join(dir, 'applied.osm.pbf');
      const fixed = join(dir, 'fixed.osm.pbf');
      execFileSync('osmium', ['apply-changes', '--no-progress', '-o', applied, '--output-header=osmosis_replication_sequence_number=3050', MONACO.extract, fixtureFile(MONACO, 3050, 'osc.gz')]);
      const before = await readOsmHeader(applied);
      expect(before.bbox).toBeUndefined();
      const bbox = (await readOsmHeader(MONACO.extract)).bbox!;
      await copyWithHeaderBBox(applied, fixed, bbox);
      const after = await readOsmHeader(fixed);
      expect(after.bbox).toEqual(bbox);
      expect(after.replication).toEqual(before.replication);
      // osmium reads the same objects (same CRC of the data) from both files.
      const crc = (f: string) => execFileSync('osmium', ['fileinfo', '-e', '-g', 'data.crc32', f]).toString();
      expect(crc(fixed)).toBe(crc(applied));
      // A header that has a bbox is copied as it is.
      await copyWithHeaderBBox(MONACO.extract, join(dir, 'copy.osm.pbf'), [0, 0, 1, 1]);
      expect(await readFile(join(dir, 'copy.osm.pbf'))).toEqual(await readFile(MONACO.extract));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('objects as tilemaker reads them', () => {
  it('metadata does not count; members a file lacks count only as the gap they leave', async () => {
    const dir = await tempDir('tilemaker-reads');
    try {
      const nodes = 'n1 v1 T x9.5 y47.1\nn2 v1 T x9.6 y47.1\nw1 v1 Thighway=path Nn1,n2\n';
      const read = async (name: string, relation: string) => {
        await writeFile(join(dir, `${name}.opl`), `${nodes}${relation}\n`);
        return asTilemakerReads('osmium', join(dir, `${name}.opl`));
      };
      const a = await read('a', 'r1 v1 c5 t2019-01-01T00:00:00Z Ttype=route,route=hiking Mw1@,w9@,w8@');
      expect(a).toContain('r1 Ttype=route,route=hiking Mw1@,?');
      // Another version, time and changeset, and other missing members in the same place: the same.
      expect(await read('b', 'r1 v2 c6 t2019-02-01T00:00:00Z Ttype=route,route=hiking Mw1@,w7@')).toBe(a);
      // The gap before the way, no gap, another tag, another role: not the same.
      expect(await read('c', 'r1 v2 Ttype=route,route=hiking Mw7@,w1@')).not.toBe(a);
      expect(await read('d', 'r1 v2 Ttype=route,route=hiking Mw1@')).not.toBe(a);
      expect(await read('e', 'r1 v2 Ttype=route,route=bicycle Mw1@,w9@')).not.toBe(a);
      expect(await read('f', 'r1 v2 Ttype=route,route=hiking Mw1@forward,w9@')).not.toBe(a);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('night 2437 (a hiking route that changed beyond Liechtenstein): no changed tile, found without tilemaker as with it', async () => {
    const dir = await tempDir('changed-tiles');
    try {
      const before = await referenceExtract(LIECHTENSTEIN, 2434, 2436, join(dir, '2436.osm.pbf'));
      const after = await referenceExtract(LIECHTENSTEIN, 2434, 2437, join(dir, '2437.osm.pbf'));
      const box = tileBox((await readOsmHeader(after)).bbox!);
      const job = { osmium: 'osmium', tilemaker: 'tilemaker', before, after, changes: [fixtureFile(LIECHTENSTEIN, 2437, 'osc.gz')], box, keep: inTileBox(box), workDir: join(dir, 'work'), pidFile: join(dir, 'pids'), label: 'test', languages: DEFAULT_LANGUAGES };
      // The route's members present in the extract are the same before and after; its list changed elsewhere.
      const small = async (file: string, out: string) => {
        // Exit code 1: some members are beyond the extract.
        expect(spawnSync('osmium', ['getid', '--no-progress', '-r', '-O', '-o', out, file, 'r193073']).status).toBe(1);
        return asTilemakerReads('osmium', out);
      };
      expect(await small(after, join(dir, 'a.osm.pbf'))).toBe(await small(before, join(dir, 'b.osm.pbf')));
      expect(await changedTiles({ ...job, alwaysGenerate: true })).toEqual(new Set());
      expect(await changedTiles(job)).toEqual(new Set());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('/health data age', () => {
  it('per served tileset with a recorded time, and the oldest age', () => {
    const m = emptyManifest();
    expect(dataAge(m)).toEqual({});
    m.tilesets.a = { archive: 'data/a.pmtiles', kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 14, bounds: [0, 0, 1, 1], center: [0, 0, 0], tiles: 1, bytes: 1 };
    m.tilesets.b = { ...m.tilesets.a, archive: 'data/b.pmtiles' };
    setOsmState(m, 'a', { sequence: 7, timestamp: '2024-01-01T00:00:00Z' });
    setOsmState(m, 'b', { sequence: 9, timestamp: '2024-01-02T00:00:00Z' });
    setOsmState(m, 'gone', { sequence: 1, timestamp: '2020-01-01T00:00:00Z' }); // no longer a tileset: not reported
    const now = Date.parse('2024-01-03T00:00:00Z');
    expect(dataAge(m, now)).toEqual({
      data_age_seconds: 2 * 86400,
      data: { a: { sequence: 7, timestamp: '2024-01-01T00:00:00Z', age_seconds: 2 * 86400 }, b: { sequence: 9, timestamp: '2024-01-02T00:00:00Z', age_seconds: 86400 } },
    });
    setOsmState(m, 'a', undefined);
    setOsmState(m, 'b', undefined);
    setOsmState(m, 'gone', undefined);
    expect(m.osm).toBeUndefined();
  });
});
