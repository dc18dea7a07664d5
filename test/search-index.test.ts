// The search index of the Liechtenstein and Monaco extracts (built by pipeline/search/ alone, no tiles),
// queried through lib/search/query.ts: every settlement the extract names (osmium) is found by its full
// name first and by its first five letters in the top 5, and with one typo; every street name finds the
// street within 100 m of its ways; `lang` answers `name:xx`; reverse geocoding of points on streets
// answers those streets; FTS5's syntax typed in `q` is searched as text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haversine } from '../lib/geo-distance.ts';
import { DEFAULT_LANGUAGES } from '../lib/languages.ts';
import { photonFeature } from '../lib/search/photon.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { words } from '../lib/search/text.ts';
import { searchIndexOf, settlementsOf, streetsOf, type Named, type Region } from './fixtures/search.ts';

/** `name` with one typo: the middle letter of its longest word replaced (another letter where it is an "e"). */
function typo(name: string): string | undefined {
  const longest = words(name).sort((a, b) => [...b].length - [...a].length)[0];
  const letters = [...(longest ?? '')];
  if (letters.length < 5) return undefined;
  const i = Math.floor(letters.length / 2);
  const typed = [...letters];
  typed[i] = letters[i].toLowerCase() === 'e' ? 'a' : 'e';
  return name.replace(longest, typed.join(''));
}

/** The distance from `p` to the nearest node of `ways`, metres. */
function nearestNode(p: { lon: number; lat: number }, ways: Named[]): number {
  return Math.min(...ways.flatMap((w) => w.positions.map(([lon, lat]) => haversine(p, { lon, lat }))));
}

describe.each(['liechtenstein', 'monaco'] as Region[])('the search index of %s', (region) => {
  let index: SearchIndex;
  let settlements: Named[];
  let streets: Map<string, Named[]>;
  const first = (q: string, kinds?: ('place' | 'street')[]) => index.search({ q, limit: 5, kinds })[0]?.entry;

  beforeAll(async () => {
    index = SearchIndex.open(await searchIndexOf(region));
    [settlements, streets] = await Promise.all([settlementsOf(region), streetsOf(region)]);
  });
  afterAll(() => index?.close());

  it('finds every settlement by its full name first, by its first five letters in the top 5, and with one typo in the top 5', () => {
    expect(settlements.length).toBeGreaterThan(region === 'monaco' ? 8 : 15);
    const misses: string[] = [];
    for (const s of settlements) {
      const name = s.tags.name;
      const top = first(name);
      if (top?.name !== name || top.kind !== 'place') misses.push(`${name}: first is ${top?.kind} ${top?.name}`);
      const prefix = [...name].slice(0, 5).join('');
      if (!index.search({ q: prefix, limit: 5 }).some((h) => h.entry.name === name && h.entry.kind === 'place')) misses.push(`${prefix}…: ${name} not in the top 5`);
      const t = typo(name);
      if (t && !index.search({ q: t, limit: 5 }).some((h) => h.entry.name === name && h.entry.kind === 'place')) misses.push(`${t} (typo): ${name} not in the top 5`);
    }
    expect(misses).toEqual([]);
  });

  it('finds every street by its name, within 100 m of its ways', () => {
    expect(streets.size).toBeGreaterThan(100);
    const misses: string[] = [];
    for (const [name, ways] of streets) {
      const hit = first(name, ['street']);
      if (hit?.name !== name) misses.push(`${name}: first street is ${hit?.name}`);
      else if (nearestNode(hit, ways) > 100) misses.push(`${name}: ${nearestNode(hit, ways).toFixed(0)} m from its ways`);
    }
    expect(misses).toEqual([]);
  });

  it('finds a street with one typo', () => {
    const names = [...streets.keys()].filter((n) => typo(n) !== undefined).slice(0, 40);
    const misses = names.filter((n) => !index.search({ q: typo(n)!, limit: 5, kinds: ['street'] }).some((h) => h.entry.name === n));
    expect(misses).toEqual([]);
  });

  it('answers name:xx with lang=xx, and finds a place by its name in another language', () => {
    // Place nodes (an entry of their own; the settlement is found among the places of its name).
    const localized = settlements.filter((s) => s.id.startsWith('n')).flatMap((s) => DEFAULT_LANGUAGES.filter((c) => s.tags[`name:${c}`] && s.tags[`name:${c}`] !== s.tags.name).map((c) => ({ s, c, local: s.tags[`name:${c}`] })));
    expect(localized.length).toBeGreaterThan(3);
    for (const { s, c, local } of localized.slice(0, 20)) {
      const hit = index.search({ q: s.tags.name, limit: 10, kinds: ['place'] }).find((h) => h.entry.key === s.id)!;
      expect(hit, s.tags.name).toBeDefined();
      expect(photonFeature(hit, index, c).properties.name, `${s.tags.name} in ${c}`).toBe(local);
      expect(photonFeature(hit, index).properties.name).toBe(s.tags.name);
      expect(index.search({ q: local, limit: 5 }).some((h) => h.entry.name === s.tags.name), `${local} finds ${s.tags.name}`).toBe(true);
    }
  });

  it('reverse geocoding of points on streets answers those streets, with the distance', () => {
    // The middle of a middle segment of every 10th way (deterministic), with the default kinds (addresses and streets).
    const ways = [...streets.values()].flat().filter((w) => w.positions.length >= 2 && w.id.startsWith('w')).filter((_, i) => i % 10 === 0);
    expect(ways.length).toBeGreaterThan(10);
    const misses: string[] = [];
    for (const w of ways) {
      const k = Math.floor((w.positions.length - 1) / 2);
      const [a, b] = [w.positions[k], w.positions[k + 1]];
      const p = { lon: (a[0] + b[0]) / 2, lat: (a[1] + b[1]) / 2 };
      // The nearest is a street on the point; the way's own is among those there (ways of two names may share nodes).
      const hits = index.reverse({ ...p, radiusM: 200, limit: 3, kinds: ['address', 'street'] });
      const own = hits.find((h) => h.entry.kind === 'street' && h.entry.name === w.tags.name);
      if (hits[0]?.entry.kind !== 'street' || hits[0].distance! > 1) misses.push(`${w.id} ${w.tags.name}: first ${hits[0]?.entry.kind} ${hits[0]?.entry.name} at ${hits[0]?.distance?.toFixed(1)} m`);
      else if (!own || own.distance! > 1) misses.push(`${w.id} ${w.tags.name}: not among the streets on the point (${hits.map((h) => `${h.entry.name} ${h.distance?.toFixed(1)} m`).join(', ')})`);
    }
    expect(misses).toEqual([]);
    expect(index.reverse({ lat: 0, lon: 0, radiusM: 1000, limit: 1, kinds: ['street'] })).toEqual([]);
  });

  it('searches FTS5 syntax typed in q as text', () => {
    const place = settlements[0].tags.name;
    const other = settlements[1].tags.name;
    for (const q of [`${place}"`, `"${place}`, `${place}*`, `-${place}`, `^${place}`, `(${place})`, `${place})`, `{${place}}`, `${place}:`, `'${place}'`, `${place} %`]) {
      expect(first(q)?.name, q).toBe(place);
    }
    // As operators, these would find both places, or the first without the second.
    expect(index.search({ q: `${place} OR ${other}`, limit: 10 }).map((h) => h.entry.name)).not.toEqual(expect.arrayContaining([place, other]));
    expect(index.search({ q: `${place} NOT ${other}`, limit: 10 }).some((h) => h.entry.name === place && h.entry.kind === 'place')).toBe(false);
    for (const q of ['NEAR(a b)', 'AND', 'OR', 'NOT', '"', '*', '"*"', '-', ':', '^', '()', `${place} AND`, 'x"y', '""""', 'a NEAR/2 b', '\u0000', '𝔸𝔹', 'ʼaʼ']) {
      expect(() => index.search({ q, limit: 5 }), q).not.toThrow();
    }
  });
});
