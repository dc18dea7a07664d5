// The search index's pure parts, without osmium or a server: the words and their folding (the same as
// SQLite's unicode61 tokenizer with remove_diacritics 2, checked against FTS5 itself), the FTS5 query of
// the user's words (every word a string: FTS5 operators are text), the one-typo neighbourhood, the
// ranking, distances, the query parameters of GET /search and /reverse (a 400 naming the parameter), and
// the answer cache's keys and bound.
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { haversine } from '../lib/geo-distance.ts';
import { boxAround, distanceToSegment } from '../lib/search/distance.ts';
import { matchOf, scoreOf } from '../lib/search/rank.ts';
import { deletions, fold, ftsQuery, nameKey, withinOneEdit, words } from '../lib/search/text.ts';
import { HttpError } from '../static-server/context.ts';
import { answerKey, SearchAnswers } from '../static-server/search/answers.ts';
import { reverseParams, searchParams, langParam } from '../static-server/search/params.ts';

/** A text of many scripts, accents and letters without decomposition. */
const CORPUS = 'Mdína Città Vecchia Sainte-Dévote Straße ÉCOLE Ørsted Łódź Đakovo İstanbul ǅemal ﬁne Ё Й ά Ά Ħal Qormi Triesenberg Mühleholz ñandú Nguyễn Thị Minh Khai 東京 서울 القاهرة תל-אביב Αθήνα Москва ʼaʼ a·b';

/** An FTS5 table over `rows` with the index's tokenizer; returns its MATCH. */
function fts(rows: string[]): (match: string) => number[] {
  const db = new Database(':memory:');
  db.exec("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2', prefix='2 3 4')");
  const ins = db.prepare('INSERT INTO t (rowid, x) VALUES (?, ?)');
  rows.forEach((r, i) => ins.run(i + 1, r));
  return (match) => (db.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid').pluck().all(match) as number[]);
}

describe('words and folding', () => {
  it('splits and folds as unicode61 with remove_diacritics 2 does', () => {
    const db = new Database(':memory:');
    db.exec("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row');");
    db.prepare('INSERT INTO t VALUES (?)').run(CORPUS);
    const vocabulary = (db.prepare('SELECT term FROM v').pluck().all() as string[]).sort();
    expect([...new Set(words(CORPUS).map(fold))].sort()).toEqual(vocabulary);
    expect(fold('Mdína')).toBe('mdina');
    expect(nameKey('Sainte-Dévote')).toBe('sainte devote');
    expect(nameKey('  Città   Vecchia ')).toBe('citta vecchia');
  });

  it('quotes every word: FTS5 syntax typed is searched as text, and never fails', () => {
    const match = fts(['NEAR AND OR NOT', 'Vaduz', 'Schaan', 'a"b', 'name x', 'Vaduz Schaan']);
    expect(match(ftsQuery(['OR']))).toEqual([1]);
    expect(match(ftsQuery(['NEAR', 'AND']))).toEqual([1]);
    expect(match(ftsQuery(['Vaduz', 'OR', 'Schaan']))).toEqual([]);
    expect(match(ftsQuery(['Vaduz', 'NOT', 'Schaan']))).toEqual([]);
    expect(match(ftsQuery(['vad'], { prefix: true }))).toEqual([2, 6]);
    expect(match(ftsQuery(['a"b']))).toEqual([4]);
    expect(match(ftsQuery(['vadus', 'schaan'], { alternatives: [['vaduz'], undefined], prefix: true }))).toEqual([6]);
    expect(ftsQuery(['vadus'], { alternatives: [['vaduz']], prefix: true })).toBe('("vadus"* OR "vaduz")');
    expect(ftsQuery(['a"b', 'c'], { prefix: true })).toBe('"a""b" AND "c"*');
    for (const q of ['"', '*', 'NEAR(a b)', 'a AND', '-', ':', '^', '(', ')', '{x}', 'x:y', '"""', '\u0000', "'", 'NOT NOT']) {
      const ws = words(q);
      if (ws.length) expect(() => match(ftsQuery(ws, { prefix: true })), q).not.toThrow();
    }
  });

  it('finds the words one edit away through their one-deletion neighbourhoods', () => {
    expect(deletions('vaduz').sort()).toEqual(['aduz', 'vadu', 'vadz', 'vauz', 'vduz']);
    for (const [a, b] of [['vaduz', 'vadus'], ['vaduz', 'vadz'], ['vaduz', 'vaduzz'], ['vaduz', 'vadzu'], ['triesenberg', 'triesenbreg']]) {
      expect(withinOneEdit(a, b), `${a} ${b}`).toBe(true);
      // Every pair one edit apart shares a key of the neighbourhoods ({word} ∪ deletions).
      const keys = new Set([a, ...deletions(a)]);
      expect([b, ...deletions(b)].some((k) => keys.has(k)), `${a} ${b}`).toBe(true);
    }
    for (const [a, b] of [['vaduz', 'vdauzx'], ['vaduz', 'schaan'], ['vaduz', 'vazud']]) expect(withinOneEdit(a, b), `${a} ${b}`).toBe(false);
  });
});

describe('ranking', () => {
  const typed = (q: string, prefix = true) => ({ words: words(fold(q)), prefix });
  it('puts the exact name first, then a name the words cover more of, a name that starts with them', () => {
    const m = (q: string, name: string) => matchOf(typed(q), { folded: [nameKey(name)], importance: 0 }).score;
    expect(m('Vaduz', 'Vaduz')).toBe(1);
    expect(m('Vadu', 'Vaduz')).toBeGreaterThan(m('Vadu', 'Vaduzerstrasse'));
    expect(m('Schaan', 'Schaanwald')).toBeGreaterThan(m('Schaan', 'Bahnhof Schaan Nord'));
    expect(m('la co', 'La Condamine')).toBeGreaterThan(m('la co', 'Avenue de la Costa'));
    expect(m('Landstrasse 12', 'Landstrasse 12')).toBe(1);
    expect(m('Vaduz Schaan', 'Vaduz')).toBeLessThan(m('Vaduz', 'Vaduz Post'));
    expect(matchOf(typed('Vad'), { folded: [nameKey('Vaduz')], importance: 0 }).whole).toBe(false);
    expect(matchOf(typed('Vaduz'), { folded: [nameKey('Rathaus Vaduz')], importance: 0 }).whole).toBe(true);
  });

  it('weighs importance, and with a point, closeness', () => {
    expect(scoreOf(1, 0.65)).toBeGreaterThan(scoreOf(1, 0.3));
    expect(scoreOf(0.8, 0.4, 100)).toBeGreaterThan(scoreOf(0.8, 0.4, 5000));
  });
});

describe('distances', () => {
  it('from a point to a segment, in metres of the project\'s great circle', () => {
    const a: [number, number] = [9.52, 47.14];
    const b: [number, number] = [9.53, 47.14];
    expect(distanceToSegment({ lon: 9.525, lat: 47.14 }, a, b)).toBeLessThan(0.01);
    const north = { lon: 9.525, lat: 47.14 + 100 / 111_318 };
    expect(distanceToSegment(north, a, b)).toBeCloseTo(haversine(north, { lon: 9.525, lat: 47.14 }), 1);
    expect(distanceToSegment({ lon: 9.54, lat: 47.14 }, a, b)).toBeCloseTo(haversine({ lon: 9.54, lat: 47.14 }, { lon: 9.53, lat: 47.14 }), 3);
    const [w, s, e, n] = boxAround({ lon: 9.5, lat: 47 }, 1000);
    expect(haversine({ lon: 9.5, lat: 47 }, { lon: e, lat: 47 })).toBeGreaterThan(1000);
    expect(haversine({ lon: 9.5, lat: 47 }, { lon: 9.5, lat: s })).toBeGreaterThan(1000);
    expect(w).toBeLessThan(9.5);
    expect(n).toBeGreaterThan(47);
  });
});

describe('GET /search and /reverse parameters', () => {
  const refused = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(HttpError);
      expect((e as HttpError).status).toBe(400);
      return (e as HttpError).message;
    }
    throw new Error('accepted');
  };
  it('reads the defaults and Photon\'s names', () => {
    expect(searchParams({ q: 'Vaduz' })).toEqual({ q: 'Vaduz', limit: 10, kinds: undefined, bbox: undefined, near: undefined });
    expect(searchParams({ q: 'x', near: '9.5,47.1', limit: '50', kind: 'street,poi', bbox: '9,47,10,48' })).toEqual({ q: 'x', limit: 50, kinds: ['street', 'poi'], bbox: [9, 47, 10, 48], near: { lon: 9.5, lat: 47.1 } });
    expect(searchParams({ q: 'x', lat: '47.1', lon: '9.5' }).near).toEqual({ lon: 9.5, lat: 47.1 });
    expect(reverseParams({ lat: '47.1', lon: '9.5' })).toEqual({ lat: 47.1, lon: 9.5, radiusM: 1000, limit: 1, kinds: ['address', 'street'] });
    expect(reverseParams({ lat: '47.1', lon: '9.5', radius: '0.2', kind: 'poi' })).toMatchObject({ radiusM: 200, kinds: ['poi'] });
    expect(langParam({ lang: 'de' })).toBe('de');
  });

  it('answers 400 naming the parameter', () => {
    expect(refused(() => searchParams({}))).toMatch(/^q: required/);
    expect(refused(() => searchParams({ q: '  ' }))).toMatch(/^q: required/);
    expect(refused(() => searchParams({ q: 'x'.repeat(201) }))).toBe('q: longer than 200 characters (201)');
    expect(searchParams({ q: 'é'.repeat(200) }).q).toHaveLength(200);
    expect(refused(() => searchParams({ q: ['a', 'b'] }))).toBe('q: given 2 times, expected once');
    for (const near of ['9.5', '9.5,47,1', 'a,b', '181,0', '0,91', ',']) expect(refused(() => searchParams({ q: 'x', near }))).toMatch(/^near: expected lon,lat/);
    for (const bbox of ['1,2,3', '3,2,1,4', 'a,b,c,d']) expect(refused(() => searchParams({ q: 'x', bbox }))).toMatch(/^bbox: expected west,south,east,north/);
    for (const limit of ['0', '51', '2.5', 'ten', '']) expect(refused(() => searchParams({ q: 'x', limit }))).toMatch(/^limit: expected a whole number 1–50/);
    expect(refused(() => searchParams({ q: 'x', kind: 'street,cafe' }))).toBe('kind: expected a comma-separated list of place, street, poi, address (got "cafe")');
    expect(refused(() => searchParams({ q: 'x', lat: '47' }))).toMatch(/^lon: required/);
    expect(refused(() => langParam({ lang: 'German' }))).toMatch(/^lang: "German" is not a language code/);
    expect(refused(() => reverseParams({ lon: '9' }))).toMatch(/^lat: required/);
    expect(refused(() => reverseParams({ lat: '91', lon: '9' }))).toMatch(/^lat: expected a latitude/);
    expect(refused(() => reverseParams({ lat: '47', lon: 'x' }))).toMatch(/^lon: expected a longitude/);
    for (const radius of ['0', '-1', '11', 'far']) expect(refused(() => reverseParams({ lat: '47', lon: '9', radius }))).toMatch(/^radius: expected a radius in km/);
  });
});

describe('the answer cache', () => {
  it('keys answers by their parsed parameters, answers a repeated query without asking again, keeps within its bytes', async () => {
    // However the URL spells it, the same search is the same key; another limit, language or route is another.
    expect(answerKey('search', searchParams({ q: 'Vaduz', limit: '10' }), undefined)).toBe(answerKey('search', searchParams({ q: 'Vaduz' }), undefined));
    const keys = [answerKey('search', searchParams({ q: 'Vaduz', limit: '5' }), undefined), answerKey('search', searchParams({ q: 'Vaduz' }), 'de'), answerKey('search', searchParams({ q: 'vaduz' }), undefined), answerKey('reverse', reverseParams({ lat: '47.1', lon: '9.5' }), undefined)];
    expect(new Set([answerKey('search', searchParams({ q: 'Vaduz' }), undefined), ...keys]).size).toBe(5);
    const answers = new SearchAnswers(2000);
    let asked = 0;
    const answer = (body: string) => async () => (asked++, body);
    expect(await answers.get('a', answer('{"a":1}'))).toBe('{"a":1}');
    expect(await answers.get('a', answer('{"a":2}'))).toBe('{"a":1}');
    expect(asked).toBe(1);
    // Larger than the bound: answered, not kept.
    const big = 'x'.repeat(1000);
    expect(await answers.get('big', answer(big))).toBe(big);
    expect(answers.entries.has('big')).toBe(false);
    // A failed answer is not kept either.
    await expect(answers.get('b', async () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    expect(await answers.get('b', answer('{"b":1}'))).toBe('{"b":1}');
    // Off (a budget of 0): every query is answered afresh.
    const off = new SearchAnswers(0);
    await off.get('a', answer('1'));
    await off.get('a', answer('1'));
    expect(asked).toBe(5);
  });
});
