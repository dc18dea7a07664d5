// tilebake render page. Loaded from the render host (workers/render-host/server.ts, on 127.0.0.1, started
// by the build's render stage and by the server's on-demand renders); exposes `window.tilebake` for the render worker: init(style, pixelRatio)
// once per style, then renderViews(views) for each batch of metatiles and flush() for the receipts of
// their uploads.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { MAP_TEXT_OPTIONS } from './map-text.mjs';
import { MapInternals, runFramesImmediately } from './maplibre-adapter.mjs';
import { PROTOCOL, connectNet, netLoad, netPost } from './net-client.mjs';

const ORIGIN = window.location.origin + '/';

/**
 * The shared worker that makes the page's requests (net-worker.js), started by render.html while
 * this module and maplibre-gl load (measured: listening ~8 ms after this module runs, ~28 ms when
 * started here); resolves once it listens.
 */
const netReady = connectNet(window.tilebakeNet);

runFramesImmediately();
/** Errors reported by the map (or blocked requests) since the last render started. */
let errors = [];
let map = null;
/** The map's internals (maplibre-adapter.mjs), checked when the map is created. */
let internals = null;
let currentStyle = null;
/** True when the last render reported problems: the next one starts without tiles (an errored tile would stay). */
let lastRenderFailed = false;

function describe(e) {
  const err = e && e.error ? e.error : e;
  const url = err && err.url ? ` (${err.url})` : '';
  const status = err && err.status ? ` HTTP ${err.status}` : '';
  return `${(err && err.message) || String(err)}${status}${url}`;
}

/**
 * URLs of the render host become `tilebake://` URLs, which MapLibre (page and tile worker) loads
 * through the shared worker (net-client.mjs). Every other URL is refused: the server answers 404
 * naming it, and the build fails naming it.
 */
function transformRequest(url) {
  if (url.startsWith(ORIGIN)) return { url: PROTOCOL + url.slice('http'.length) };
  if (url.startsWith('blob:') || url.startsWith('data:')) return { url };
  errors.push(`request for a resource that is not available locally: ${url}`);
  return { url: `${PROTOCOL}${ORIGIN.slice('http'.length)}__blocked?url=${encodeURIComponent(url)}` };
}

function waitFor(event) {
  return new Promise((resolve) => map.once(event, resolve));
}

/**
 * Create the map (first call) or switch style / pixel ratio; resolves when the style is loaded
 * ('style.load', not 'load', which would also wait for tiles and a first frame of the placeholder
 * view: the first render loads what its own view needs). Sprite and glyph errors surface there.
 */
async function loadStyle(styleUrl, pixelRatio) {
  if (!map) {
    maplibregl.setWorkerCount(1);
    await netReady;
    maplibregl.addProtocol(PROTOCOL, netLoad);
    await maplibregl.importScriptInWorkers(new URL('./net-client.mjs', import.meta.url).href);
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
      canvasContextAttributes: { preserveDrawingBuffer: true, antialias: false, premultipliedAlpha: true },
      transformRequest,
      // The build validated the style before serving it (pipeline/render/style.ts); not again per load.
      validateStyle: false,
      // Labels drawn as the preview page draws them (map-text.mjs).
      ...MAP_TEXT_OPTIONS,
      center: [0, 0],
      zoom: 0,
    });
    map.on('error', (e) => errors.push(describe(e)));
    currentStyle = styleUrl;
    await waitFor('style.load');
  } else {
    // setPixelRatio alone keeps the sprite of the old ratio (icons of sprite.png scaled up at @2x):
    // reload the style so the sprite is fetched for the new ratio.
    const ratioChanged = map.getPixelRatio() !== pixelRatio;
    if (ratioChanged) map.setPixelRatio(pixelRatio);
    if (currentStyle !== styleUrl || ratioChanged) {
      map.setStyle(styleUrl, { diff: false, validate: false });
      currentStyle = styleUrl;
      await waitFor('style.load');
    }
  }
  // The one self-check of MapLibre's internals, once the first style is loaded; until it passes,
  // every init reports it (nothing is rendered).
  if (!internals) {
    try {
      internals = new MapInternals(map, maplibregl.getVersion());
    } catch (e) {
      errors.push(describe(e));
    }
  }
  const found = errors;
  errors = [];
  return found;
}

/** A view begun ahead of its render() (see render): its key and its 'idle' promise. */
let begun = null;

function viewKey(view) {
  return JSON.stringify([view.width, view.height, view.center, view.zoom]);
}

/**
 * Start drawing `view`: size the canvas, reset what would make the pixels depend on earlier views,
 * jump. Resolves on 'idle', once the view's tiles are loaded and its frame is painted.
 * - A metatile's pixels must not depend on what this page rendered before. Loaded tiles are kept
 *   (re-fetching and re-parsing them cost ~60% of the draw time); what made the result depend on
 *   history is neutralised instead (MapInternals.prepareView): placement history and tiles held for
 *   fade, frames painted while tiles load and the dash atlas layout, zoom history.
 * - After a failed render, start without tiles: an errored tile would stay and not report again.
 */
function begin(view) {
  errors = [];
  const container = map.getContainer();
  const w = `${view.width}px`;
  const h = `${view.height}px`;
  if (container.style.width !== w || container.style.height !== h) {
    container.style.width = w;
    container.style.height = h;
    map.resize();
  }
  internals.prepareView(view.crop || 0);
  if (lastRenderFailed) internals.resetTiles();
  lastRenderFailed = true;
  const idle = waitFor('idle');
  map.jumpTo({ center: view.center, zoom: view.zoom, bearing: 0, pitch: 0 });
  map.triggerRepaint();
  begun = { key: viewKey(view), idle };
  return idle;
}

/**
 * Begin `next` now and ask for its tiles at once (MapLibre would only do so in the next frame): the
 * tile worker loads and parses them while this thread waits in readPixels for the GPU to finish the
 * current view. Nothing is painted until the current view's pixels are read (frames run only after
 * this task), and the canvas keeps its size (a resize would clear the drawing buffer), so `next`
 * must have the current size.
 */
function beginAhead(next) {
  begin(next);
  internals.requestTiles();
}

/**
 * Render one view and start uploading its pixels to `view.upload` (see flush). With `next` (the
 * view the next call will render), next's tiles load while this view's pixels are read (beginAhead
 * for a view of the same size, MapInternals.requestTilesAt for another). Resolves { width, height, errors, ms }:
 * `ms` from this call until the pixels are read (with `next`, part of next's loading counts here).
 */
async function render(view, next) {
  const t0 = performance.now();
  const ahead = begun && begun.key === viewKey(view) ? begun.idle : null;
  begun = null;
  await (ahead || begin(view));
  begun = null;
  const problems = errors.slice();
  for (const id of Object.keys(internals.tileManagers())) {
    if (!map.isSourceLoaded(id)) problems.push(`source "${id}" did not finish loading`);
  }
  if (!map.areTilesLoaded()) problems.push('tiles did not finish loading');
  const canvas = map.getCanvas();
  lastRenderFailed = problems.length > 0;
  const { width, height } = canvas;
  if (problems.length) return { width, height, errors: problems, ms: performance.now() - t0 };
  if (next) {
    if (next.width === view.width && next.height === view.height) beginAhead(next);
    // A next view of another size: its tiles load while this view is read; render(next) then resizes,
    // jumps and finds them loading or loaded.
    else internals.requestTilesAt(next, maplibregl.LngLat);
    await internals.tileRequestsSent();
  }
  // The upload runs while the next view is drawn; flush() waits for all of them.
  const crop = view.crop || 0;
  const read = { x: crop, y: crop, width: width - 2 * crop, height: height - 2 * crop };
  if (read.width <= 0 || read.height <= 0) throw new Error(`crop ${crop} leaves nothing of a ${width}×${height} canvas`);
  uploads.push(upload(`${view.upload}?width=${read.width}&height=${read.height}`, internals.readPixels(read)));
  return { width, height, errors: problems, ms: performance.now() - t0 };
}

/**
 * Render `views` in order, each with the next one loading ahead (see render); stops at the first
 * that reports problems. One call per batch: a CDP round trip per view cost ~15 ms. Resolves the
 * results of the views rendered.
 */
async function renderViews(views) {
  const out = [];
  for (let i = 0; i < views.length; i++) {
    const r = await render(views[i], views[i + 1]);
    out.push(r);
    if (r.errors.length) break;
  }
  return out;
}

/** Uploads in flight, in render order: each resolves to { receipt } once the server has the image, or { error }. */
const uploads = [];

/**
 * POST pixels to the render host, their buffer transferred to the shared worker (no copy, no Blob:
 * see netPost); resolves the server's receipt.
 */
async function upload(url, pixels) {
  try {
    const r = await netPost(url, pixels.buffer);
    if (!r.ok) return { error: `uploading the image failed: HTTP ${r.status} ${r.text ?? r.statusText}` };
    return { receipt: JSON.parse(new TextDecoder().decode(r.body)) };
  } catch (e) {
    return { error: `uploading the image failed: ${describe(e)}` };
  }
}

/** Wait for every upload since the last flush; resolves their outcomes ({ receipt } or { error }), in render order. */
function flush() {
  return Promise.all(uploads.splice(0));
}

/**
 * A style the page was opened with (`render.html?style=…&ratio=…`: a browser started ahead of the
 * worker that drives it) starts loading at once; the first init() for it gets that load's result.
 */
let preload = null;
{
  const params = new URLSearchParams(window.location.search);
  const style = params.get('style');
  if (style) {
    const ratio = Number(params.get('ratio') ?? '1');
    preload = { style, ratio, result: loadStyle(style, ratio) };
  }
}

/** Load `styleUrl` at `pixelRatio` (see loadStyle); resolves the errors reported while loading. */
function init(styleUrl, pixelRatio) {
  const p = preload;
  preload = null;
  if (p && p.style === styleUrl && p.ratio === pixelRatio) return p.result;
  return (p ? p.result.catch(() => undefined) : Promise.resolve()).then(() => loadStyle(styleUrl, pixelRatio));
}

window.tilebake = { init, render, renderViews, flush, ready: true };
