import Database from 'better-sqlite3';
import { copyFile, mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './fixtures/cli.ts';

const MONACO = resolve('data/sample/monaco_omt.mbtiles');
const FIRENZE = resolve('test/fixtures/vector/firenze.pmtiles');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-badinput-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Make an SQLite file with the given statements. */
function sqlite(path: string, statements: string[], bind?: (db: Database.Database) => void): void {
  const db = new Database(path);
  for (const s of statements) db.exec(s);
  bind?.(db);
  db.close();
}

/** Every input the vector stage must refuse, with a word its message must contain. */
async function badInputs(): Promise<{ label: string; input: string; expect: RegExp }[]> {
  const missing = join(dir, 'missing.mbtiles');

  const notSqlite = join(dir, 'text.mbtiles');
  await writeFile(notSqlite, 'this is not a database\n'.repeat(20));

  const noTables = join(dir, 'notmbtiles.mbtiles');
  sqlite(noTables, ['CREATE TABLE things (a INTEGER)', 'INSERT INTO things VALUES (1)']);

  const noMetadata = join(dir, 'nometadata.mbtiles');
  sqlite(noMetadata, ['CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)']);

  const unknownFormat = join(dir, 'gif.mbtiles');
  sqlite(
    unknownFormat,
    [
      'CREATE TABLE metadata (name TEXT, value TEXT)',
      'CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)',
      "INSERT INTO metadata VALUES ('name', 'x'), ('format', 'gif')",
    ],
    (db) => db.prepare('INSERT INTO tiles VALUES (0, 0, 0, ?)').run(Buffer.from('GIF89a....')),
  );

  const badBounds = join(dir, 'badbounds.mbtiles');
  await copyFile(MONACO, badBounds);
  sqlite(badBounds, ["UPDATE metadata SET value = '7.4,43.7,north' WHERE name = 'bounds'"]);

  const emptyTiles = join(dir, 'empty.mbtiles');
  sqlite(emptyTiles, [
    'CREATE TABLE metadata (name TEXT, value TEXT)',
    'CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)',
    "INSERT INTO metadata VALUES ('format', 'pbf')",
  ]);

  const outOfRange = join(dir, 'outofrange.mbtiles');
  sqlite(
    outOfRange,
    [
      'CREATE TABLE metadata (name TEXT, value TEXT)',
      'CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)',
      "INSERT INTO metadata VALUES ('format', 'pbf')",
    ],
    (db) => db.prepare('INSERT INTO tiles VALUES (2, 7, 0, ?)').run(Buffer.from([0x1a, 0x00])),
  );

  // Firenze with its root directory overwritten by garbage.
  const corruptRoot = join(dir, 'corrupt-root.pmtiles');
  const firenze = await readFile(FIRENZE);
  const garbled = Buffer.from(firenze);
  garbled.fill(0xff, 127, 127 + 300);
  await writeFile(corruptRoot, garbled);

  // Firenze cut short: the header promises more bytes than the file has.
  const truncated = join(dir, 'truncated.pmtiles');
  await writeFile(truncated, firenze.subarray(0, 20_000));

  const badMagic = join(dir, 'badmagic.pmtiles');
  await writeFile(badMagic, Buffer.concat([Buffer.from('XXTiles'), firenze.subarray(7, 4096)]));

  const emptyFolder = join(dir, 'empty-folder');
  await mkdir(emptyFolder);

  const strayFile = join(dir, 'stray-folder');
  await mkdir(join(strayFile, '0', '0'), { recursive: true });
  await writeFile(join(strayFile, '0', '0', '0.pbf'), Buffer.from([0x1a, 0x00]));
  await writeFile(join(strayFile, '0', '0', 'notes.txt'), 'hello');

  return [
    { label: 'missing file', input: missing, expect: /no such file/ },
    { label: 'not SQLite', input: notSqlite, expect: /not an SQLite/ },
    { label: 'SQLite without MBTiles tables', input: noTables, expect: /not an MBTiles file.*"metadata"/ },
    { label: 'MBTiles without metadata', input: noMetadata, expect: /"metadata"/ },
    { label: 'unknown tile format', input: unknownFormat, expect: /metadata "format".*"gif"/ },
    { label: 'malformed bounds', input: badBounds, expect: /metadata "bounds"/ },
    { label: 'MBTiles without tiles', input: emptyTiles, expect: /no tiles/ },
    { label: 'tile outside its zoom', input: outOfRange, expect: /2\/7\/3 out of range/ },
    { label: 'corrupt PMTiles root directory', input: corruptRoot, expect: /corrupt|cannot read/ },
    { label: 'truncated PMTiles', input: truncated, expect: /truncated/ },
    { label: 'PMTiles with bad magic', input: badMagic, expect: /not a PMTiles archive/ },
    { label: 'empty folder', input: emptyFolder, expect: /no tiles found/ },
    { label: 'folder with a stray file', input: strayFile, expect: /notes\.txt: unexpected entry/ },
  ];
}

describe('bad vector inputs', () => {
  it('each exits non-zero with a message naming the file and leaves no output or temp file', async () => {
    const cases = await badInputs();
    for (const c of cases) {
      const outDir = join(dir, `out-${cases.indexOf(c)}`);
      await mkdir(outDir);
      const r = await runCli(['vector', c.input, join(outDir, 'out.pmtiles')]);
      expect(r.code, `${c.label}: exit code (stderr: ${r.stderr})`).not.toBe(0);
      expect(r.stderr, c.label).toContain(c.label === 'folder with a stray file' ? 'stray-folder' : c.input);
      expect(r.stderr, c.label).toMatch(c.expect);
      expect(r.stderr, `${c.label}: no stack trace`).not.toMatch(/\n\s+at /);
      expect(await readdir(outDir), `${c.label}: output folder`).toEqual([]);
    }
  }, 180_000); // 13 CLI runs in turn: ~15 s on a quiet machine, several times that under load

  it('refuses to overwrite the input with the output', async () => {
    const copy = join(dir, 'self.pmtiles');
    await copyFile(FIRENZE, copy);
    const r = await runCli(['vector', copy, copy]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/overwrite the input/);
    expect((await readFile(copy)).equals(await readFile(FIRENZE))).toBe(true);
  });

  it('a failing input keeps an existing archive at the output path untouched', async () => {
    const outDir = join(dir, 'keep');
    await mkdir(outDir);
    const out = join(outDir, 'out.pmtiles');
    await copyFile(FIRENZE, out);
    const notSqlite = join(dir, 'keep-text.mbtiles');
    await writeFile(notSqlite, 'not a database either\n'.repeat(10));
    const r = await runCli(['vector', notSqlite, out]);
    expect(r.code).not.toBe(0);
    expect(await readdir(outDir)).toEqual(['out.pmtiles']);
    const fh = await open(out, 'r');
    const size = (await fh.stat()).size;
    await fh.close();
    expect(size).toBe((await readFile(FIRENZE)).length);
  });
});
