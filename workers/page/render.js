// tilebake render page. Loaded from the local asset server; exposes `window.tilebake` for the
// render worker: init(style, pixelRatio) once, then render(view) for every metatile.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';

const ORIGIN = window.location.origin + '/';
/** Errors reported by the map (or blocked requests) since the last render started. */
let errors = [];
let map = null;
let currentStyle = null;
/** True when the last render reported problems: the next one starts without tiles (an errored tile would stay). */
let lastRenderFailed = false;

function describe(e) {
  const err = e && e.error ? e.error : e;
  const url = err && err.url ? ` (${err.url})` : '';
  const status = err && err.status ? ` HTTP ${err.status}` : '';
  return `${(err && err.message) || String(err)}${status}${url}`;
}

/** Refuse every URL that is not on the local asset server; the server answers 404 naming it. */
function transformRequest(url) {
  if (url.startsWith(ORIGIN) || url.startsWith('blob:') || url.startsWith('data:')) return { url };
  errors.push(`request for a resource that is not available locally: ${url}`);
  return { url: `${ORIGIN}__blocked?url=${encodeURIComponent(url)}` };
}

function waitFor(event) {
  return new Promise((resolve) => map.once(event, resolve));
}

/** Create the map (first call) or switch style / pixel ratio; resolves when the style is loaded. */
async function init(styleUrl, pixelRatio) {
  if (!map) {
    maplibregl.setWorkerCount(1);
    const container = document.getElementById('map');
    container.style.width = '256px';
    container.style.height = '256px';
    map = new maplibregl.Map({
      container,
      style: styleUrl,
      pixelRatio,
      interactive: false,
      attributionControl: false,
      fadeDuration: 0,
      trackResize: false,
      minZoom: -2,
      maxZoom: 24,
      refreshExpiredTiles: false,
      renderWorldCopies: true,
      transformConstrain: (center, zoom) => ({ center, zoom }),
      canvasContextAttributes: { preserveDrawingBuffer: true, antialias: false },
      transformRequest,
      center: [0, 0],
      zoom: 0,
    });
    map.on('error', (e) => errors.push(describe(e)));
    currentStyle = styleUrl;
    await waitFor('load');
  } else {
    // setPixelRatio alone keeps the sprite of the old ratio (icons of sprite.png scaled up at @2x):
    // reload the style so the sprite is fetched for the new ratio.
    const ratioChanged = map.getPixelRatio() !== pixelRatio;
    if (ratioChanged) map.setPixelRatio(pixelRatio);
    if (currentStyle !== styleUrl || ratioChanged) {
      map.setStyle(styleUrl, { diff: false });
      currentStyle = styleUrl;
      await waitFor('style.load');
    }
  }
  const found = errors;
  errors = [];
  return found;
}

/**
 * Make every symbol placement start from nothing. MapLibre seeds each placement with the previous
 * one (a label keeps its previous anchor or offset, for stability while panning), so the labels of the
 * final frame would depend on the order in which tiles arrived. With `fadeDuration: 0` every frame is a
 * full placement anyway, so dropping the history costs nothing. Internal API, guarded so that a
 * MapLibre upgrade fails loudly instead of rendering differently.
 */
function placeWithoutHistory(style) {
  if (style.__tilebakePlacement) return;
  const update = style._updatePlacement;
  if (typeof update !== 'function') {
    throw new Error('MapLibre internals changed: style._updatePlacement is missing');
  }
  if (typeof style._releaseSymbolFadeTiles !== 'function') {
    throw new Error('MapLibre internals changed: style._releaseSymbolFadeTiles is missing');
  }
  style._updatePlacement = function (...args) {
    this.pauseablePlacement = undefined;
    this.placement = undefined;
    // Tiles kept from the previous view: a tile that is no longer ideal but has symbols is "held for
    // fade" for one more frame, and MapLibre releases held tiles only *after* painting the frame that
    // goes idle. So the final frame still placed and drew the labels of the previous view's tiles
    // (placement goes from the highest zoom down, so e.g. a z12 child's "MONACO" won over the ideal z11
    // tile's, drawn at the child's text size). With `fadeDuration: 0` there is nothing to fade: drop
    // held tiles before placing, so every frame places and draws only the tiles of the current view.
    this._releaseSymbolFadeTiles();
    return update.apply(this, args);
  };
  style.__tilebakePlacement = true;
}

/**
 * Lay the dash atlas out afresh for the frame about to be painted. MapLibre adds a row to
 * `style.lineAtlas` for each `line-dasharray` the first time it is drawn, so a pattern's row (and its
 * texture sampling: ±1 in a few pixels of dashed lines) depended on which zooms and layers this page
 * had drawn before. Emptied before each painted frame, the atlas is refilled in the frame's draw order,
 * a function of the view alone. Data-driven dasharrays are laid out by the worker into the tiles'
 * vertex data (rows in tile arrival order); emptying the atlas would break those, so a style that has
 * one keeps the atlas (order-dependent, as it always was). Internal API, guarded so that a MapLibre
 * upgrade fails loudly.
 */
function freshDashAtlas(style) {
  const atlas = style.lineAtlas;
  if (!atlas || !(atlas.data instanceof Uint8Array) || typeof atlas.nextRow !== 'number' || !atlas.dashEntry) {
    throw new Error('MapLibre internals changed: style.lineAtlas (data, nextRow, dashEntry) is missing');
  }
  if (!Array.isArray(style._order) || !style._layers) throw new Error('MapLibre internals changed: style._order / style._layers are missing');
  for (const id of style._order) {
    const layer = style._layers[id];
    if (layer.type !== 'line') continue;
    const kind = layer.paint.get('line-dasharray')?.value?.kind;
    if (kind === 'source' || kind === 'composite') return;
  }
  if (atlas.nextRow === 0) return;
  atlas.nextRow = 0;
  atlas.dashEntry = {};
  atlas.data.fill(0);
  atlas.dirty = true;
}

/**
 * Forget the zoom history: cross-faded properties given as zoom functions (dasharray, patterns) take
 * their `from` value from the zoom below or above depending on the previous zoom. Reset before each
 * view, and the style re-evaluated, as on a fresh page. Internal API, guarded.
 */
function forgetZoomHistory() {
  const history = map.style.zoomHistory;
  if (!history || typeof history.first !== 'boolean' || typeof map._update !== 'function') {
    throw new Error('MapLibre internals changed: style.zoomHistory.first or map._update is missing');
  }
  history.first = true;
  map._update(true);
}

/**
 * Paint only frames in which every tile is loaded. Tiles of a new view arrive over several frames
 * and MapLibre paints each one in full (~100 ms at 1152² in SwiftShader) although only the last is
 * read. Placement and tile bookkeeping still run every frame; only the painting waits. Each painted
 * frame starts with a fresh dash atlas (freshDashAtlas). Internal API, guarded so that a MapLibre
 * upgrade fails loudly.
 */
function paintOnlyWhenLoaded() {
  const painter = map.painter;
  if (painter.__tilebakePaint) return;
  const paint = painter.render;
  if (typeof paint !== 'function') throw new Error('MapLibre internals changed: map.painter.render is missing');
  painter.render = function (style, ...args) {
    if (!map.areTilesLoaded()) return undefined;
    freshDashAtlas(style);
    return paint.call(this, style, ...args);
  };
  painter.__tilebakePaint = true;
}

/** Drop every loaded tile of every source (internal API; guarded so a MapLibre upgrade fails loudly). */
function resetTiles() {
  const managers = map.style && map.style.tileManagers;
  if (!managers) throw new Error('MapLibre internals changed: map.style.tileManagers is missing');
  for (const id of Object.keys(managers)) managers[id].clearTiles();
}

/**
 * Render one view: size the canvas, jump, wait until everything is loaded and drawn, read the pixels.
 * Resolves { dataUrl, width, height, errors }.
 */
async function render(view) {
  errors = [];
  const container = map.getContainer();
  const w = `${view.width}px`;
  const h = `${view.height}px`;
  if (container.style.width !== w || container.style.height !== h) {
    container.style.width = w;
    container.style.height = h;
    map.resize();
  }
  // A metatile's pixels must not depend on what this page rendered before. Loaded tiles are kept
  // (re-fetching and re-parsing them cost ~60% of the draw time); what made the result depend on
  // history is neutralised instead: placement history and tiles held for fade (placeWithoutHistory),
  // frames painted while tiles load and the dash atlas layout (paintOnlyWhenLoaded), zoom history.
  // After a failed render, start without tiles: an errored tile would stay and not report again.
  const t0 = performance.now();
  placeWithoutHistory(map.style);
  paintOnlyWhenLoaded();
  forgetZoomHistory();
  if (lastRenderFailed) resetTiles();
  lastRenderFailed = true;
  const idle = waitFor('idle');
  map.jumpTo({ center: view.center, zoom: view.zoom, bearing: 0, pitch: 0 });
  map.triggerRepaint();
  await idle;
  const problems = errors.slice();
  const style = map.getStyle();
  for (const id of Object.keys(style.sources || {})) {
    if (!map.isSourceLoaded(id)) problems.push(`source "${id}" did not finish loading`);
  }
  if (!map.areTilesLoaded()) problems.push('tiles did not finish loading');
  const canvas = map.getCanvas();
  const gl = map.painter && map.painter.context && map.painter.context.gl;
  if (gl) gl.finish();
  const t1 = performance.now();
  lastRenderFailed = problems.length > 0;
  const dataUrl = problems.length ? '' : canvas.toDataURL('image/png');
  const timing = { draw: t1 - t0, read: performance.now() - t1 };
  return { dataUrl, width: canvas.width, height: canvas.height, errors: problems, timing };
}

window.tilebake = { init, render, ready: true };
