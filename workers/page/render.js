// tilebake render page. Loaded from the local asset server; exposes `window.tilebake` for the
// render worker: init(style, pixelRatio) once, then render(view) for every metatile.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';

const ORIGIN = window.location.origin + '/';
/** Errors reported by the map (or blocked requests) since the last render started. */
let errors = [];
let map = null;
let currentStyle = null;

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
  style._updatePlacement = function (...args) {
    this.pauseablePlacement = undefined;
    this.placement = undefined;
    return update.apply(this, args);
  };
  style.__tilebakePlacement = true;
}

/**
 * Paint only frames in which every tile is loaded. After the tiles are reset, they arrive over several
 * frames and MapLibre paints each one in full (~100 ms at 1152² in SwiftShader) although only the last
 * is read. Placement and tile bookkeeping still run every frame; only the painting waits. Internal
 * API, guarded so that a MapLibre upgrade fails loudly.
 */
function paintOnlyWhenLoaded() {
  const painter = map.painter;
  if (painter.__tilebakePaint) return;
  const paint = painter.render;
  if (typeof paint !== 'function') throw new Error('MapLibre internals changed: map.painter.render is missing');
  painter.render = function (...args) {
    if (!map.areTilesLoaded()) return undefined;
    return paint.apply(this, args);
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
  // Start every metatile from the same state (no tiles, symbol index or placement left over from
  // the previous view), so a metatile's pixels do not depend on what this page rendered before.
  const t0 = performance.now();
  placeWithoutHistory(map.style);
  paintOnlyWhenLoaded();
  resetTiles();
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
  const dataUrl = problems.length ? '' : canvas.toDataURL('image/png');
  const timing = { draw: t1 - t0, read: performance.now() - t1 };
  return { dataUrl, width: canvas.width, height: canvas.height, errors: problems, timing };
}

window.tilebake = { init, render, ready: true };
