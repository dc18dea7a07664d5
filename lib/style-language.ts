/**
 * The one style rewrite for a reader's language (the server's `style.json?language=xx` and a baked
 * style entry's `"language"` both call it): every symbol layer whose `text-field` shows a name (reads
 * `name`, `name:…` or `name_…`) shows `name:xx` first, then what the style itself chose.
 *
 * As protomaps basemaps, VersaTiles and MapTiler's SDK do, the label becomes a `coalesce` of the
 * language's field and the style's own expression, so a feature without `name:xx` keeps the style's
 * label exactly. The style's `text-field` is first read as an expression the way MapLibre reads it:
 * a legacy token string (`"{name:latin}\n{name:nonlatin}"`, any number of tokens: missing ones are
 * empty) becomes a `concat` of `get`s, a legacy function is converted by the style spec's own
 * `convertFunction`. Two forms need care (MapLibre's typing rules):
 * - a `step` on `["zoom"]` must stay the top-level expression: each of its outputs is rewritten;
 * - a `format` (or anything holding one) would lose its fonts and scales inside `coalesce` (coalesce
 *   of a formatted and a plain value is coerced to a plain string): `["case", ["has", f], ["get", f], …]`.
 * Layers whose label shows no name (`{ref}`, contour heights) are left as they are. Rewriting with the
 * language a label already reads first changes nothing.
 */
import { convertFunction, isFunction, latest } from '@maplibre/maplibre-gl-style-spec';
import { nameField } from './languages.ts';

/** A style as far as this rewrite cares. */
export interface StyleWithLayers {
  layers?: unknown[];
  [k: string]: unknown;
}

type Layer = { type?: unknown; layout?: Record<string, unknown>; [k: string]: unknown };

/** Properties that hold a name: `name`, `name:xx`, `name:latin`, `name_en`, `name_int` … */
const NAME_PROPERTY = /^name(?:[:_].+)?$/;
/** `{property}` tokens of a legacy token string. */
const TOKEN = /\{([^{}]+)\}/g;
/** The style spec's description of `text-field` (for converting legacy functions). */
const TEXT_FIELD_SPEC = (latest as unknown as { layout_symbol: Record<string, unknown> }).layout_symbol['text-field'];

const isArray = Array.isArray;

/** A legacy token string as the expression MapLibre evaluates it to; a string without tokens stays a string. */
export function tokenStringExpression(text: string): unknown {
  const parts: unknown[] = [];
  let at = 0;
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > at) parts.push(text.slice(at, m.index));
    parts.push(['get', m[1]]);
    at = m.index + m[0].length;
  }
  if (parts.length === 0) return text;
  if (at < text.length) parts.push(text.slice(at));
  return parts.length === 1 ? ['to-string', parts[0]] : ['concat', ...parts];
}

/** `text-field` (string, legacy function or expression) as an expression. */
function asExpression(value: unknown): unknown {
  if (typeof value === 'string') return tokenStringExpression(value);
  if (isFunction(value)) return convertFunction(value, TEXT_FIELD_SPEC as never);
  return value;
}

/** True when `expr` reads a name property anywhere (`["get", "name:latin"]` …). */
function readsName(expr: unknown): boolean {
  if (!isArray(expr)) return false;
  if (expr[0] === 'get' && typeof expr[1] === 'string' && expr.length === 2) return NAME_PROPERTY.test(expr[1]);
  return expr.some(readsName);
}

/** True when `expr` holds a `format` expression (its value keeps fonts and scales per section). */
function holdsFormat(expr: unknown): boolean {
  return isArray(expr) && (expr[0] === 'format' || expr.some(holdsFormat));
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** True when `expr` already shows `field` first (this rewrite's own forms). */
function readsFirst(expr: unknown, field: string): boolean {
  if (!isArray(expr)) return false;
  if (expr[0] === 'coalesce') return same(expr[1], ['get', field]);
  return expr[0] === 'case' && expr.length === 4 && same(expr[1], ['has', field]) && same(expr[2], ['get', field]);
}

/** `expr` (which reads a name) with `field` first. */
function withFieldFirst(expr: unknown, field: string): unknown {
  if (readsFirst(expr, field)) return expr;
  if (isArray(expr) && expr[0] === 'step' && same(expr[1], ['zoom'])) {
    // Outputs are at 2, 4, 6 …; the stops between them stay.
    return expr.map((e, i) => (i >= 2 && i % 2 === 0 && readsName(e) ? withFieldFirst(e, field) : e));
  }
  if (holdsFormat(expr)) return ['case', ['has', field], ['get', field], expr];
  return ['coalesce', ['get', field], expr];
}

/** The `text-field` value with `name:<language>` first, or undefined when it shows no name. */
export function localizeTextField(value: unknown, language: string): unknown {
  const expr = asExpression(value);
  if (!readsName(expr)) return undefined;
  return withFieldFirst(expr, nameField(language));
}

/**
 * A copy of `style` whose name labels read `name:<language>` first (see the module comment); layers
 * it does not change are the same objects. `language` must be a well-formed code (lib/languages.ts).
 */
export function localizeStyle<T extends StyleWithLayers>(style: T, language: string): T {
  if (!isArray(style.layers)) return style;
  const layers = style.layers.map((l) => {
    const layer = l as Layer;
    if (layer === null || typeof layer !== 'object' || layer.type !== 'symbol' || !layer.layout || !('text-field' in layer.layout)) return l;
    const field = localizeTextField(layer.layout['text-field'], language);
    return field === undefined ? l : { ...layer, layout: { ...layer.layout, 'text-field': field } };
  });
  return { ...style, layers };
}
