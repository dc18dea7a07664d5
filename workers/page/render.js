// tilebake render page. Loaded from the local asset server; exposes `window.tilebake` for the
// render worker: init(style, pixelRatio) once per style, then renderViews(views) for each batch of
// metatiles and flush() for their uploads.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { forgetZoomHistory, paintOnlyWhenLoaded, placeOncePerView, rasteriseReadAreaOnly, resetTiles, tileRequestsSent } from './map-internals.mjs';
import { PROTOCOL, connectNet, netLoad, netPost } from './net-client.mjs';

const ORIGIN = window.location.origin + '/';

/**
 * The shared worker that makes the page's requests (net-worker.js), started by render.html while
 * this module and maplibre-gl load (measured: listening ~8 ms after this module runs, ~28 ms when
 * started here); resolves once it listens.
 */
const netReady = connectNet(window.tilebakeNet);

/**
 * Run animation frames as soon as the event loop is free instead of at the display's 60 Hz: a view
 * takes a few frames (jump, tiles arrive, paint), and each waited up to 16.7 ms for the next vsync,
 * most of a low-zoom render. Nothing here is animated; the canvas is read with readPixels, not shown.
 * MapLibre schedules its frames with window.requestAnimationFrame, looked up at each call.
 */
function immediateFrames() {
  const callbacks = new Map();
  let nextId = 0;
  const channel = new MessageChannel();
  channel.port1.onmessage = (e) => {
    const cb = callbacks.get(e.data);
    if (!cb) return;
    callbacks.delete(e.data);
    cb(performance.now());
  };
  window.requestAnimationFrame = (cb) => {
    const id = ++nextId;
    callbacks.set(id, cb);
    channel.port2.postMessage(id);
    return id;
  };
  window.cancelAnimationFrame = (id) => callbacks.delete(id);
}
immediateFrames();
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

/**
 * URLs of the local asset server become `tilebake://` URLs, which MapLibre (page and tile worker)
 * loads through the shared worker (net-client.mjs). Every other URL is refused: the server answers
 * 404 naming it.
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
 *   history is neutralised instead: placement history and tiles held for fade (placeOncePerView),
 *   frames painted while tiles load and the dash atlas layout (paintOnlyWhenLoaded), zoom history.
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
  placeOncePerView(map);
  paintOnlyWhenLoaded(map);
  rasteriseReadAreaOnly(map, view.crop || 0);
  forgetZoomHistory(map);
  if (lastRenderFailed) resetTiles(map);
  lastRenderFailed = true;
  const idle = waitFor('idle');
  map.jumpTo({ center: view.center, zoom: view.zoom, bearing: 0, pitch: 0 });
  map.triggerRepaint();
  begun = { key: viewKey(view), idle };
  return idle;
}

/**
 * The map's camera transform, for beginAhead and loadAhead, which hand it (or a copy) to
 * style._updateSources. Internal API, guarded so that a MapLibre upgrade fails loudly.
 */
function aheadTransform() {
  const camera = map._camera;
  const transform = camera && camera.transform;
  if (typeof map.style._updateSources !== 'function' || !transform || typeof transform.clone !== 'function') {
    throw new Error('MapLibre internals changed: style._updateSources or map._camera.transform.clone is missing');
  }
  return transform;
}

/**
 * Begin `next` now and ask for its tiles at once (MapLibre would only do so in the next frame): the
 * tile worker loads and parses them while this thread waits in readPixels for the GPU to finish the
 * current view. Nothing is painted until the current view's pixels are read (frames run only after
 * this task), and the canvas keeps its size (a resize would clear the drawing buffer), so `next`
 * must have the current size. Internal API (style._updateSources, map._camera), guarded.
 */
function beginAhead(next) {
  begin(next);
  map.style._updateSources(aheadTransform());
}

/**
 * Ask for the tiles of `next`, a view of another size than the current one, without touching the
 * canvas: resizing it would clear the drawing buffer before the current view's pixels are read. The
 * tile managers are updated with a copy of the camera at next's size and place, so next's tiles load
 * while this thread waits in readPixels; render(next) then resizes, jumps and finds them loading or
 * loaded. Internal API (style._updateSources, map._camera.transform), guarded.
 */
function loadAhead(next) {
  const t = aheadTransform().clone();
  t.resize(next.width, next.height, false);
  t.setZoom(next.zoom);
  t.setCenter(new maplibregl.LngLat(next.center[0], next.center[1]));
  map.style._updateSources(t);
}

/**
 * Render one view and start uploading its pixels to `view.upload` (see flush). With `next` (the
 * view the next call will render), next's tiles load while this view's pixels are read (beginAhead
 * for a view of the same size, loadAhead for another). Resolves { width, height, errors }.
 */
async function render(view, next) {
  const ahead = begun && begun.key === viewKey(view) ? begun.idle : null;
  begun = null;
  await (ahead || begin(view));
  begun = null;
  const problems = errors.slice();
  const managers = map.style.tileManagers;
  for (const id of Object.keys(managers)) {
    if (!map.isSourceLoaded(id)) problems.push(`source "${id}" did not finish loading`);
  }
  if (!map.areTilesLoaded()) problems.push('tiles did not finish loading');
  const canvas = map.getCanvas();
  lastRenderFailed = problems.length > 0;
  const { width, height } = canvas;
  if (problems.length) return { width, height, errors: problems };
  if (next) {
    if (next.width === view.width && next.height === view.height) beginAhead(next);
    else loadAhead(next);
    await tileRequestsSent(map);
  }
  // The upload runs while the next view is drawn; flush() waits for all of them.
  const crop = view.crop || 0;
  const read = { x: crop, y: crop, width: width - 2 * crop, height: height - 2 * crop };
  if (read.width <= 0 || read.height <= 0) throw new Error(`crop ${crop} leaves nothing of a ${width}×${height} canvas`);
  uploads.push(upload(`${view.upload}?width=${read.width}&height=${read.height}`, readPixels(read)));
  return { width, height, errors: problems };
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

/** Uploads in flight: each resolves to an error message, or undefined once the server has the image. */
const uploads = [];

/**
 * POST pixels to the asset server, their buffer transferred to the shared worker (no copy, no Blob:
 * see netPost).
 */
async function upload(url, pixels) {
  try {
    const r = await netPost(url, pixels.buffer);
    return r.ok ? undefined : `uploading the image failed: HTTP ${r.status} ${r.text ?? r.statusText}`;
  } catch (e) {
    return `uploading the image failed: ${describe(e)}`;
  }
}

/** Wait for every upload in flight; resolves the errors of those that failed. */
async function flush() {
  const done = await Promise.all(uploads.splice(0));
  return done.filter((e) => e !== undefined);
}

/**
 * The pixels of rectangle `r` (device pixels; the crop is symmetric, so the same from the top or
 * the bottom) of the frame just drawn, read with gl.readPixels (measured ~12 % faster per metatile
 * than copying the canvas into a 2D canvas): RGBA rows, bottom row first, premultiplied by alpha,
 * as WebGL's drawing buffer holds them (the node side flips and un-premultiplies: encode.ts).
 */
function readPixels(r) {
  const context = map.painter && map.painter.context;
  const gl = context && context.gl;
  if (!gl || typeof gl.readPixels !== 'function' || !context.bindFramebuffer) {
    throw new Error('MapLibre internals changed: map.painter.context (gl, bindFramebuffer) is missing');
  }
  context.bindFramebuffer.set(null);
  const pixels = new Uint8Array(r.width * r.height * 4);
  gl.readPixels(r.x, r.y, r.width, r.height, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
  return pixels;
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
