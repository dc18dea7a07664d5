// The reader's language: the one style rewrite (lib/style-language.ts) on the sample styles and on the
// text-field forms styles use, evaluated with the style spec's own expression engine; and over HTTP:
// style.json?language= (bytes unchanged without it), rendered.json and static maps choosing a baked
// variant, the catalog, and a 400 with the JSON error shape for every bad or unknown code.
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPropertyExpression, latest, validateStyleMin } from '@maplibre/maplibre-gl-style-spec';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LANGUAGES, isLanguageCode, languagesOfLayers } from '../lib/languages.ts';
import { updateManifest } from '../lib/manifest.ts';
import { Compression, PMTilesWriter, TileType } from '../lib/pmtiles/index.ts';
import { localizeStyle, localizeTextField, tokenStringExpression } from '../lib/style-language.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { rewriteNeutralUrls } from '../lib/style-urls.ts';
import { request, serveOptions, type RawResponse } from './fixtures/server/helpers.ts';
import { buildStyleOutput, encodeTile, fixtureTiles, MONACO_BBOX, ROOT, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';

type Layer = { id: string; type: string; layout?: Record<string, unknown> };
type Style = { layers: Layer[] } & Record<string, unknown>;

const TEXT_FIELD = (latest as unknown as { layout_symbol: Record<string, never> }).layout_symbol['text-field'];
const SAMPLE_STYLES = ['osm-bright', 'positron', 'topo'];

async function sampleStyle(id: string): Promise<Style> {
  return JSON.parse(await readFile(join(ROOT, 'data/sample/styles', id, 'style.json'), 'utf8')) as Style;
}

/** A text-field's label for a feature with `properties`, as MapLibre evaluates it (token strings: missing tokens are empty). */
function label(field: unknown, properties: Record<string, unknown>, zoom = 14): string {
  if (typeof field === 'string') return field.replace(/\{([^{}]+)\}/g, (_, k: string) => (k in properties ? String(properties[k]) : ''));
  const e = createPropertyExpression(field, 'text-field', TEXT_FIELD);
  if (e.result === 'error') throw new Error(`invalid text-field ${JSON.stringify(field)}: ${e.value.map((x) => x.message).join('; ')}`);
  const v = e.value.evaluate({ zoom }, { type: 'Point', properties } as never) as { toString(): string } | null;
  return v === null ? '' : v.toString();
}

/** The properties a text-field reads (`{tokens}` and `["get", …]`), independently of the rewrite. */
function readProperties(field: unknown): string[] {
  if (typeof field === 'string') return [...field.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]);
  if (!Array.isArray(field)) return [];
  if (field[0] === 'get' && typeof field[1] === 'string') return [field[1]];
  return field.flatMap(readProperties);
}

/** Features a label may meet: Latin, non-Latin with a Latin form, and with the language's own name. */
const FEATURES: Record<string, unknown>[] = [
  { name: 'Vaduz', 'name:latin': 'Vaduz', name_en: 'Vaduz', ref: 'A 13', ele: 457 },
  { name: 'Москва', 'name:latin': 'Moskva', 'name:nonlatin': 'Москва', name_int: 'Moskva', ref: 'M1', ele: 156 },
];

describe('the rewrite on the sample styles', () => {
  for (const id of SAMPLE_STYLES) {
    it(`${id}: every label that shows a name reads name:it first, then the style's own; other layers untouched; a valid style`, async () => {
      const style = await sampleStyle(id);
      const before = JSON.stringify(style);
      const out = localizeStyle(style, 'it');
      expect(JSON.stringify(style)).toBe(before); // the input is not changed
      expect(validateStyleMin(out as never)).toEqual([]);
      let named = 0;
      out.layers.forEach((l, i) => {
        const original = style.layers[i];
        const field = original.layout?.['text-field'];
        if (field === undefined || !readProperties(field).some((p) => /^name([:_]|$)/.test(p))) {
          expect(l, original.id).toBe(original);
          return;
        }
        named++;
        const localized = l.layout!['text-field'];
        for (const f of FEATURES) {
          // Without name:it the label is the style's own, to the character; with it, name:it alone.
          expect(label(localized, f), `${original.id} ${JSON.stringify(f)}`).toBe(label(field, f));
          expect(label(localized, { ...f, 'name:it': 'Italiano' }), original.id).toBe('Italiano');
        }
        expect({ ...l, layout: { ...l.layout, 'text-field': field } }).toEqual(original);
      });
      expect(named).toBeGreaterThan(id === 'topo' ? 2 : 10);
      // Asking again for the language a style already reads first changes nothing.
      expect(JSON.stringify(localizeStyle(out, 'it'))).toBe(JSON.stringify(out));
    });
  }
});

describe('text-field forms', () => {
  const f = { name: 'Zürich', 'name:latin': 'Zürich', 'name:nonlatin': 'Ζυρίχη', ref: 'A1' };
  const de = { ...f, 'name:de': 'Zürich (de)' };

  it('legacy token strings, one or several tokens, literal text around them', () => {
    expect(tokenStringExpression('{name:latin}')).toEqual(['to-string', ['get', 'name:latin']]);
    expect(tokenStringExpression('{name:latin}\n{name:nonlatin}')).toEqual(['concat', ['get', 'name:latin'], '\n', ['get', 'name:nonlatin']]);
    expect(tokenStringExpression('Exit {ref}!')).toEqual(['concat', 'Exit ', ['get', 'ref'], '!']);
    expect(tokenStringExpression('no tokens')).toBe('no tokens');
    for (const t of ['{name:latin}', '{name:latin} {name:nonlatin}', '({name}) - {name:nonlatin}', '{name_en}\n{ref}']) {
      const field = localizeTextField(t, 'de');
      expect(label(field, f), t).toBe(label(t, f));
      expect(label(field, de), t).toBe('Zürich (de)');
    }
  });

  it('expressions: get, concat, coalesce, case, match; labels without names stay as they are', () => {
    for (const e of [
      ['get', 'name:latin'],
      ['concat', ['get', 'name:latin'], '\n', ['get', 'name:nonlatin']],
      ['coalesce', ['get', 'name_en'], ['get', 'name']],
      ['case', ['has', 'name:nonlatin'], ['concat', ['get', 'name:latin'], ' ', ['get', 'name:nonlatin']], ['get', 'name']],
      ['match', ['get', 'class'], 'city', ['upcase', ['get', 'name']], ['get', 'name']],
    ]) {
      const field = localizeTextField(e, 'de');
      expect(field).toEqual(['coalesce', ['get', 'name:de'], e]);
      expect(label(field, f)).toBe(label(e, f));
      expect(label(field, de)).toBe('Zürich (de)');
    }
    expect(localizeTextField('{ref}', 'de')).toBeUndefined();
    expect(localizeTextField(['concat', ['to-string', ['get', 'ele']], ' m'], 'de')).toBeUndefined();
    expect(localizeTextField('Monaco', 'de')).toBeUndefined();
  });

  it('format expressions keep their fonts and scales where name:xx is missing', () => {
    const fmt = ['format', ['get', 'name:latin'], { 'font-scale': 1.2 }, '\n', {}, ['get', 'name:nonlatin'], { 'font-scale': 0.8, 'text-font': ['literal', ['Noto Sans Italic']] }];
    const field = localizeTextField(fmt, 'de');
    expect(field).toEqual(['case', ['has', 'name:de'], ['get', 'name:de'], fmt]);
    const e = createPropertyExpression(field, 'text-field', TEXT_FIELD);
    if (e.result === 'error') throw new Error(e.value[0].message);
    const own = e.value.evaluate({ zoom: 10 }, { type: 'Point', properties: f } as never) as { sections: { text: string; scale: number | null }[] };
    expect(own.sections.map((s) => [s.text, s.scale])).toEqual([['Zürich', 1.2], ['\n', null], ['Ζυρίχη', 0.8]]);
    expect(label(field, de)).toBe('Zürich (de)');
  });

  it('zoom steps and legacy zoom functions stay top-level: each output reads name:xx first', () => {
    const step = ['step', ['zoom'], ['get', 'name:latin'], 10, ['concat', ['get', 'name:latin'], '\n', ['get', 'name:nonlatin']], 14, ['get', 'ref']];
    const field = localizeTextField(step, 'de');
    expect(field).toEqual(['step', ['zoom'], ['coalesce', ['get', 'name:de'], step[2]], 10, ['coalesce', ['get', 'name:de'], step[4]], 14, ['get', 'ref']]);
    expect(label(field, de, 12)).toBe('Zürich (de)');
    expect(label(field, f, 12)).toBe('Zürich\nΖυρίχη');
    expect(label(field, de, 15)).toBe('A1');
    const fn = { stops: [[8, '{name:latin}'], [13, '{name:latin}\n{name:nonlatin}']] };
    const converted = localizeTextField(fn, 'de');
    expect(label(converted, f, 9)).toBe('Zürich');
    expect(label(converted, f, 14)).toBe('Zürich\nΖυρίχη');
    expect(label(converted, de, 14)).toBe('Zürich (de)');
  });
});

describe('language codes', () => {
  it("OpenMapTiles' list is the default: sorted, distinct, every code well-formed; scripts and junk are not codes", () => {
    expect(DEFAULT_LANGUAGES.length).toBe(80);
    expect([...DEFAULT_LANGUAGES].sort()).toEqual([...DEFAULT_LANGUAGES]);
    expect(new Set(DEFAULT_LANGUAGES).size).toBe(DEFAULT_LANGUAGES.length);
    expect(DEFAULT_LANGUAGES.every(isLanguageCode)).toBe(true);
    for (const bad of ['', 'latin', 'nonlatin', 'EN', 'e', 'de-', 'de--x', '../x', 'de fr', 'zh-Hant-TW-x-y-z', 'd\u00e9']) expect(isLanguageCode(bad), bad).toBe(false);
  });

  it('the languages of a TileJSON are its name:xx fields in any layer', () => {
    expect(languagesOfLayers([{ id: 'a', fields: { name: 'String', 'name:de': 'String', 'name:latin': 'String' } }, { id: 'b', fields: { 'name:zh-Hant': 'String', 'name:de': 'String' } }, { id: 'c' }])).toEqual(['de', 'zh-Hant']);
    expect(languagesOfLayers(undefined)).toEqual([]);
  });
});

describe('over HTTP', () => {
  const TOKEN = randomBytes(18).toString('base64url');
  const VARIANT = `${STYLE_ID}-it`;
  let fixture: StyleOutput;
  let server: RunningServer;
  const get = (path: string): Promise<RawResponse> => request(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const stored = async () => JSON.parse(await readFile(join(fixture.out, fixture.entry.style), 'utf8')) as Style;

  function expect400(r: RawResponse, pattern: RegExp): Record<string, unknown> {
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const body = r.json();
    expect(body).toMatchObject({ status: 400, error: expect.stringMatching(pattern) });
    return body;
  }

  beforeAll(async () => {
    process.env.TILEBAKE_QUIET = '1';
    fixture = await buildStyleOutput();
    // A variant baked in Italian: its own prepared style and raster tiles (the fixture's, negated, so its images differ).
    const style = localizeStyle(await stored(), 'it');
    await writeFile(join(fixture.out, `styles/${VARIANT}.json`), JSON.stringify(style));
    const rel = `styles/${VARIANT}.1x.png.pmtiles`;
    const w = await PMTilesWriter.create(join(fixture.out, rel), { tileType: TileType.Png, tileCompression: Compression.None, bounds: MONACO_BBOX });
    for (const t of fixtureTiles()) await w.addTile(t.z, t.x, t.y, await sharp(await encodeTile(t.z, t.x, t.y, 1, 'png')).negate().png().toBuffer());
    const res = await w.finish();
    await updateManifest(fixture.out, (m) => {
      m.styles[STYLE_ID] = { ...m.styles[STYLE_ID], styleFile: 'styles/osm-bright/style.json', languages: ['de', 'it', 'zh-Hant'] };
      m.styles[VARIANT] = {
        ...m.styles[STYLE_ID],
        style: `styles/${VARIANT}.json`,
        language: 'it',
        archives: { '1x.png': { archive: rel, format: 'png', scale: 1, tiles: res.addressedTiles, bytes: res.bytes } },
      };
    });
    server = await startServer(serveOptions(fixture.out), { tokenHashes: [hashToken(TOKEN)] });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    if (fixture) await rm(fixture.out, { recursive: true, force: true });
  });

  it("style.json: today's bytes without ?language; with it, the one rewrite; the alias the same", async () => {
    const plain = await get(`/styles/${STYLE_ID}/style.json`);
    expect(plain.status).toBe(200);
    expect(plain.body.toString()).toBe(JSON.stringify(rewriteNeutralUrls(await stored(), server.url)));
    const it = await get(`/styles/${STYLE_ID}/style.json?language=it`);
    expect(it.status).toBe(200);
    expect(it.body.toString()).toBe(JSON.stringify(rewriteNeutralUrls(localizeStyle(await stored(), 'it'), server.url)));
    expect(it.headers.etag).not.toBe(plain.headers.etag);
    expect((await get(`/styles/${STYLE_ID}.json?language=it`)).body.equals(it.body)).toBe(true);
    const zh = await get(`/styles/${STYLE_ID}/style.json?language=zh-Hant`);
    expect(zh.json().layers.find((l: Layer) => l.id === 'place-city').layout['text-field'][1]).toEqual(['get', 'name:zh-Hant']);
    // Other query parameters do not change the bytes.
    expect((await get(`/styles/${STYLE_ID}/style.json?foo=bar`)).body.equals(plain.body)).toBe(true);
  });

  it('style.json: a malformed, repeated or empty code, or one the tiles do not carry, is a 400', async () => {
    expect400(await get(`/styles/${STYLE_ID}/style.json?language=EN`), /language: "EN" is not a language code/);
    expect400(await get(`/styles/${STYLE_ID}/style.json?language=`), /language: "" is not a language code/);
    expect400(await get(`/styles/${STYLE_ID}/style.json?language=%3Cscript%3E`), /is not a language code/);
    expect400(await get(`/styles/${STYLE_ID}/style.json?language=de&language=it`), /language: given 2 times/);
    const body = expect400(await get(`/styles/${STYLE_ID}/style.json?language=fr`), /style "osm-bright" has no labels in "fr" \(its tiles carry de, it, zh-Hant\)/);
    expect(body.languages).toEqual(['de', 'it', 'zh-Hant']);
  });

  it('rendered.json?language= is the TileJSON of the baked variant; a language without one is a 400 naming the baked', async () => {
    const tj = (await get(`/styles/${STYLE_ID}/rendered.json?language=it`)).json();
    expect(tj.tiles).toEqual([`${server.url}/styles/${VARIANT}/{z}/{x}/{y}.png`]);
    expect((await get(`/styles/${VARIANT}/rendered.json?language=it`)).json().tiles).toEqual(tj.tiles);
    expect((await get(`/styles/${STYLE_ID}/rendered.json`)).json().tiles[0]).toContain(`/styles/${STYLE_ID}/`);
    const body = expect400(await get(`/styles/${STYLE_ID}/rendered.json?language=de`), /style "osm-bright" has no raster tiles baked in "de"; baked: it \(osm-bright-it\)/);
    expect(body.baked).toEqual({ it: VARIANT });
    expect400(await get(`/styles/${STYLE_ID}/rendered.json?language=x_`), /is not a language code/);
  });

  it('static maps ?language= compose from the baked variant; a language without one is a 400 naming the baked', async () => {
    const view = '7.4246,43.7384,8/120x90.png';
    const own = await get(`/styles/${STYLE_ID}/static/${view}`);
    const variant = await get(`/styles/${VARIANT}/static/${view}`);
    const asked = await get(`/styles/${STYLE_ID}/static/${view}?language=it`);
    expect([own.status, variant.status, asked.status]).toEqual([200, 200, 200]);
    expect(asked.body.equals(variant.body)).toBe(true);
    expect(asked.body.equals(own.body)).toBe(false);
    expect((await get(`/styles/${VARIANT}/static/${view}?language=it`)).body.equals(variant.body)).toBe(true);
    const body = expect400(await get(`/styles/${STYLE_ID}/static/${view}?language=fr`), /no raster tiles baked in "fr"; baked: it \(osm-bright-it\)/);
    expect(body.baked).toEqual({ it: VARIANT });
    expect400(await get(`/styles/${STYLE_ID}/static/${view}?language=Italian`), /is not a language code/);
  });

  it('the catalog lists each style’s languages and baked variants', async () => {
    const styles = (await get('/catalog.json')).json().styles as { id: string; language?: string; languages: string[]; baked: Record<string, string> }[];
    expect(styles.find((s) => s.id === STYLE_ID)).toMatchObject({ languages: ['de', 'it', 'zh-Hant'], baked: { it: VARIANT } });
    expect(styles.find((s) => s.id === VARIANT)).toMatchObject({ language: 'it', baked: { it: VARIANT } });
  });
});
