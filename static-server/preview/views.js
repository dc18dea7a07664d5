// The style document of each view the page offers: a style's pre-rendered raster tiles, the style
// drawn from its vector tiles, the inspector's outlines of a vector tileset, or a raster tileset's images;
// on MapLibre's globe when chosen (the server's style.json?projection=globe; the page's own documents carry the projection).
import { baseUrl, fragment, state } from './session.js';

/** MapLibre's globe in a document the page writes itself, when chosen (Web Mercator raster tiles are drawn on it by MapLibre). */
function projected(style) {
  return state.globe ? { ...style, projection: { type: 'globe' } } : style;
}

/** The raster tiles of a style: @2x on high-density screens when built, in the chosen format. */
function rasterStyle(style, format) {
  const scales = style.rasters.filter((k) => k.endsWith(`.${format}`)).map((k) => Number(k[0]));
  const scale = window.devicePixelRatio > 1 && scales.includes(2) ? 2 : scales.includes(1) ? 1 : 2;
  return projected({
    version: 8,
    sources: {
      raster: {
        type: 'raster',
        tiles: [`${baseUrl()}/styles/${encodeURIComponent(style.id)}/{z}/{x}/{y}${scale === 2 ? '@2x' : ''}.${format}`],
        tileSize: 256,
        minzoom: style.minzoom,
        maxzoom: style.maxzoom,
        bounds: style.bounds,
        ...(style.attribution ? { attribution: style.attribution } : {}),
      },
    },
    layers: [{ id: 'raster', type: 'raster', source: 'raster' }],
  });
}

/** A raster tileset's images (imagery, hillshade): its @2x tiles on high-density screens when built. */
function rasterTilesetStyle(tileset) {
  const hidpi = window.devicePixelRatio > 1 && tileset.maxzoom_2x !== undefined;
  return projected({
    version: 8,
    sources: {
      raster: {
        type: 'raster',
        tiles: [`${baseUrl()}/data/${encodeURIComponent(tileset.id)}/{z}/{x}/{y}${hidpi ? '@2x' : ''}.${tileset.format}`],
        tileSize: tileset.tileSize ?? 256,
        minzoom: tileset.minzoom,
        maxzoom: hidpi ? tileset.maxzoom_2x : tileset.maxzoom,
        bounds: tileset.bounds,
        ...(tileset.attribution ? { attribution: tileset.attribution } : {}),
      },
    },
    // Dark under the images, as the inspector: transparent pixels (outside the images) show it.
    layers: [{ id: 'background', type: 'background', paint: { 'background-color': '#10131a' } }, { id: 'raster', type: 'raster', source: 'raster' }],
  });
}

/** A colour per layer name (stable across loads). */
function layerColour(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 70%, 45%)`;
}

/** Outlines of every layer of a vector tileset, for the inspector. */
function inspectStyle(tileset) {
  const layers = [{ id: 'background', type: 'background', paint: { 'background-color': '#10131a' } }];
  for (const l of tileset.vector_layers) {
    const colour = layerColour(l.id);
    const common = { source: 'inspect', 'source-layer': l.id };
    layers.push(
      { id: `${l.id}-fill`, type: 'fill', ...common, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'fill-color': colour, 'fill-opacity': 0.12 } },
      { id: `${l.id}-line`, type: 'line', ...common, filter: ['!=', ['geometry-type'], 'Point'], paint: { 'line-color': colour, 'line-width': 1 } },
      { id: `${l.id}-point`, type: 'circle', ...common, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': colour, 'circle-radius': 3 } },
    );
  }
  const mlt = state.encoding === 'mlt' && (tileset.encodings ?? []).includes('mlt');
  const source = { type: 'vector', url: `${baseUrl()}/data/${encodeURIComponent(tileset.id)}.json${mlt ? '?encoding=mlt' : ''}`, ...(mlt ? { encoding: 'mlt' } : {}) };
  return projected({ version: 8, sources: { inspect: source }, layers });
}

/** The style whose raster tiles show the chosen language in `format`: the style's baked variant, else the style itself. */
export function bakedStyleOf(style, format) {
  const id = state.language ? style.baked?.[state.language] : undefined;
  const variant = id && state.catalog.styles.find((s) => s.id === id);
  return variant && variant.rasters.some((k) => k.endsWith(`.${format}`)) ? variant : style;
}

/** The style document (or URL) of the current view: labels in the chosen language where its tiles carry it. */
export function styleOfView() {
  const v = state.view;
  if (v.kind === 'inspect') return inspectStyle(state.catalog.tilesets.find((t) => t.id === v.id));
  if (v.kind === 'raster') return rasterTilesetStyle(state.catalog.tilesets.find((t) => t.id === v.id));
  const style = state.catalog.styles.find((s) => s.id === v.id);
  if (v.mode === 'raster') return rasterStyle(bakedStyleOf(style, v.format), v.format);
  const query = new URLSearchParams();
  if (state.language && style.languages.includes(state.language)) query.set('language', state.language);
  // MLT where a tileset has it (the server switches the style's sources of tilesets with MLT tiles).
  if (state.encoding === 'mlt' && state.catalog.tilesets.some((t) => (t.encodings ?? []).includes('mlt'))) query.set('encoding', 'mlt');
  if (state.globe) query.set('projection', 'globe');
  return `${baseUrl()}/styles/${encodeURIComponent(style.id)}/style.json${query.size ? `?${query}` : ''}`;
}

/** The raster formats a style was built in (`png`, `jpg`, …), from its archive names. */
export function rasterFormats(style) {
  return [...new Set(style.rasters.map((k) => k.split('.')[1]))];
}

/** The view the fragment asks for (`style=…&mode=raster|vector`), else the first style's raster tiles. */
export function initialView(catalog) {
  const s = catalog.styles.find((x) => x.id === fragment.get('style')) ?? catalog.styles[0];
  if (!s) {
    const t = catalog.tilesets.find((x) => x.kind === 'vector') ?? catalog.tilesets.find((x) => x.kind === 'raster');
    return t ? { kind: t.kind === 'vector' ? 'inspect' : 'raster', id: t.id } : null;
  }
  const formats = rasterFormats(s);
  const mode = fragment.get('mode') === 'vector' || formats.length === 0 ? 'vector' : 'raster';
  return { kind: 'style', id: s.id, mode, format: formats.includes('png') ? 'png' : formats[0] };
}
