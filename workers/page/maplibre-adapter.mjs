// tilebake render page: the one place that uses MapLibre GL JS internals (maplibre-gl is pinned to an
// exact version in package.json). The patches make a view's pixels a function of the view alone,
// whatever the page drew before (symbol placement, tiles held for fading, the dash atlas, zoom
// history), and a view cheaper to draw (one painted frame, no shading of the cropped margin, the next
// view's tiles requested while the current one is read). `checkInternals` verifies at page start
// that every internal used here exists, so that an upgrade fails at once naming what changed instead
// of rendering differently.

/** One internal the adapter relies on: where it is and how to tell it is there. */
const MAP_INTERNALS = [
  ['map._camera.transform.clone/resize/setZoom/setCenter', (m) => ['clone', 'resize', 'setZoom', 'setCenter'].every((f) => typeof m._camera?.transform?.[f] === 'function')],
  ['map._update', (m) => typeof m._update === 'function'],
  // Flags MapLibre sets in its frame loop (unset before the first frame): named in map._render.
  ['map._placementDirty/_sourcesDirty/_styleDirty', (m) => typeof m._render === 'function' && ['_placementDirty', '_sourcesDirty', '_styleDirty'].every((f) => String(m._render).includes(f))],
  ['map.painter.render', (m) => typeof m.painter?.render === 'function'],
  ['map.painter.context.gl.readPixels', (m) => typeof m.painter?.context?.gl?.readPixels === 'function'],
  ['map.painter.context.bindFramebuffer.set', (m) => typeof m.painter?.context?.bindFramebuffer?.set === 'function'],
];

/** Internals of a style object (a new one after each setStyle). */
const STYLE_INTERNALS = [
  ['style._updatePlacement/_releaseSymbolFadeTiles/_updateSources', (s) => ['_updatePlacement', '_releaseSymbolFadeTiles', '_updateSources'].every((f) => typeof s[f] === 'function')],
  ['style.lineAtlas.data/nextRow/dashEntry', (s) => s.lineAtlas?.data instanceof Uint8Array && typeof s.lineAtlas.nextRow === 'number' && typeof s.lineAtlas.dashEntry === 'object'],
  ['style._order/_layers', (s) => Array.isArray(s._order) && typeof s._layers === 'object' && s._layers !== null],
  ['style._layers[id].paint.get', (s) => Object.values(s._layers ?? {}).every((l) => typeof l.paint?.get === 'function' || l.paint === undefined)],
  ['style.zoomHistory.first', (s) => typeof s.zoomHistory?.first === 'boolean'],
  ['style.tileManagers', (s) => typeof s.tileManagers === 'object' && s.tileManagers !== null],
  ['tileManager.clearTiles/getIds/getTileByID', (s) => Object.values(s.tileManagers ?? {}).every((t) => ['clearTiles', 'getIds', 'getTileByID'].every((f) => typeof t[f] === 'function'))],
];

/** The error thrown when MapLibre does not have what the adapter uses. */
function changed(what, version) {
  return new Error(`MapLibre internals changed (maplibre-gl ${version}): ${what} is missing; the render page supports the version pinned in package.json`);
}

/**
 * Check every internal this adapter uses on `map` and its current style (loaded); throws one error
 * naming all that are missing. Called at page start and for each new style object.
 */
export function checkInternals(map, version) {
  const missing = [...MAP_INTERNALS.filter(([, ok]) => !ok(map)), ...(map.style ? STYLE_INTERNALS.filter(([, ok]) => !ok(map.style)) : [['map.style', () => false]])].map(([name]) => name);
  if (missing.length) throw changed(missing.join(', '), version);
}

/**
 * Run animation frames as soon as the event loop is free instead of at the display's 60 Hz: a view
 * takes a few frames (jump, tiles arrive, paint), and each waited up to 16.7 ms for the next vsync,
 * most of a low-zoom render. Nothing here is animated; the canvas is read with readPixels, not shown.
 * MapLibre schedules its frames with window.requestAnimationFrame, looked up at each call.
 */
export function runFramesImmediately() {
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

/** Microtask turns tileRequestsSent waits at most (MapLibre needs ~7 per tile; each costs microseconds). */
const MAX_REQUEST_TICKS = 100;

/**
 * MapLibre internals for the render page: one per map. The constructor checks every internal used
 * (checkInternals); the patches are installed by the first prepareView, per style where they patch
 * the style.
 */
export class MapInternals {
  /** `version`: maplibregl.getVersion(), for the error messages. */
  constructor(map, version) {
    this.map = map;
    this.version = version;
    /** The style object whose internals were last checked. */
    this.checkedStyle = map.style;
    /** The part of the drawing buffer the current view reads (device pixels), or null for all of it. */
    this.scissorRect = null;
    checkInternals(map, version);
  }

  /**
   * Make the next frames depend on the view alone, and cheap: placement once per view without
   * history (placeOncePerView), only the frame the map goes idle with painted, with a fresh dash
   * atlas (paintOnlyWhenLoaded), only the read part rasterised (rasteriseReadAreaOnly, `crop` device
   * pixels in from every side), no zoom history (forgetZoomHistory). Call after the canvas has its
   * size, before the jump.
   */
  prepareView(crop) {
    const style = this.map.style;
    if (style !== this.checkedStyle) {
      checkInternals(this.map, this.version);
      this.checkedStyle = style;
    }
    this.placeOncePerView(style);
    this.paintOnlyWhenLoaded();
    this.rasteriseReadAreaOnly(crop);
    this.forgetZoomHistory();
  }

  /**
   * Place symbols once per view, from nothing, when every tile is loaded.
   * - MapLibre seeds each placement with the previous one (a label keeps its previous anchor or
   *   offset, for stability while panning), so the labels of the final frame would depend on the order
   *   in which tiles arrived. With `fadeDuration: 0` every frame is a full placement anyway: the
   *   history is dropped.
   * - Tiles kept from the previous view: a tile that is no longer ideal but has symbols is "held for
   *   fade" for one more frame, and MapLibre releases held tiles only *after* painting the frame that
   *   goes idle, so the final frame would still place and draw the previous view's labels (placement
   *   goes from the highest zoom down: a z12 child's "MONACO" won over the ideal z11 tile's). With
   *   nothing to fade, held tiles are released before placing: every placement sees only the tiles
   *   of the current view.
   * - Frames while tiles are still loading are never painted (paintOnlyWhenLoaded), so they are not
   *   placed either: the cross-tile symbol index and the placement see the complete set of tiles once.
   * - A placement run in the frame where new symbol buckets arrived is marked stale and MapLibre
   *   places everything again in one more frame. The forced full placement already covers every
   *   bucket and, without history, the repeat gives the same result: the staleness is cleared so that
   *   the frame is painted and the map goes idle at once.
   */
  placeOncePerView(style) {
    if (style.__tilebakePlacement) return;
    const map = this.map;
    const version = this.version;
    const update = style._updatePlacement;
    style._updatePlacement = function (...args) {
      // Loading frames keep the last placement (the painter needs one) and are not painted.
      if (this.placement && !map.areTilesLoaded()) return false;
      this.pauseablePlacement = undefined;
      this.placement = undefined;
      this._releaseSymbolFadeTiles();
      update.apply(this, args);
      const placement = this.placement;
      if (!this.pauseablePlacement || !this.pauseablePlacement.isDone() || !placement || typeof placement.stale !== 'boolean') {
        throw changed('a forced full placement finishing in one frame (style.pauseablePlacement.isDone, style.placement.stale)', version);
      }
      placement.stale = false;
      return placement.hasTransitions(performance.now());
    };
    style.__tilebakePlacement = true;
  }

  /**
   * Paint only the frame the map goes idle with. Tiles of a new view arrive over several frames and
   * MapLibre would paint each one in full (~100 ms at 1152² in SwiftShader) although only the last is
   * read: a frame is painted only when every tile is loaded and nothing (sources, style, placement)
   * asks for another frame. Tile bookkeeping still runs every frame. Each painted frame starts with a
   * fresh dash atlas (freshDashAtlas).
   */
  paintOnlyWhenLoaded() {
    const map = this.map;
    const painter = map.painter;
    if (painter.__tilebakePaint) return;
    const paint = painter.render;
    painter.render = function (style, ...args) {
      if (!map.areTilesLoaded() || map._placementDirty || map._sourcesDirty || map._styleDirty) return undefined;
      freshDashAtlas(style);
      return paint.call(this, style, ...args);
    };
    painter.__tilebakePaint = true;
  }

  /**
   * Rasterise only the part of the canvas that is read (`crop` device pixels in from every side): the
   * metatile without its margin. The margin stays in the view (MapLibre places labels and icons over
   * the whole canvas, so a label near the metatile's edge is placed as its neighbour places it), but
   * its pixels are cropped away anyway, and shading them cost SwiftShader a fifth of a 4×4 metatile's
   * fragments and over half of a single tile's. A scissor test on the default framebuffer only:
   * MapLibre's offscreen passes (hillshade, heatmap, layer opacity) draw into framebuffers of their
   * own sizes, which are left whole. MapLibre itself uses no scissor (only its debug drawing).
   */
  rasteriseReadAreaOnly(crop) {
    const context = this.map.painter.context;
    const gl = context.gl;
    const bind = context.bindFramebuffer;
    const canvas = this.map.getCanvas();
    const inner = { x: crop, y: crop, width: canvas.width - 2 * crop, height: canvas.height - 2 * crop };
    // No crop, or one that leaves nothing (render() reports that): the whole canvas.
    this.scissorRect = crop > 0 && inner.width > 0 && inner.height > 0 ? inner : null;
    if (bind.__tilebakeScissor) return;
    const set = bind.set;
    const self = this;
    bind.set = function (framebuffer) {
      set.call(this, framebuffer);
      const rect = self.scissorRect;
      if (framebuffer === null && rect) {
        gl.enable(gl.SCISSOR_TEST);
        gl.scissor(rect.x, rect.y, rect.width, rect.height);
      } else {
        gl.disable(gl.SCISSOR_TEST);
      }
    };
    bind.__tilebakeScissor = true;
  }

  /**
   * Forget the zoom history: cross-faded properties given as zoom functions (dasharray, patterns)
   * take their `from` value from the zoom below or above depending on the previous zoom. Reset before
   * each view, and the style re-evaluated, as on a fresh page.
   */
  forgetZoomHistory() {
    this.map.style.zoomHistory.first = true;
    this.map._update(true);
  }

  /** The tile manager of every source, by source id. */
  tileManagers() {
    return this.map.style.tileManagers;
  }

  /** Drop every loaded tile of every source (after a failed render: an errored tile would stay). */
  resetTiles() {
    for (const manager of Object.values(this.tileManagers())) manager.clearTiles();
  }

  /**
   * Ask for the tiles of the view just begun now (MapLibre would only do so in the next frame), so
   * that the tile worker loads and parses them while this thread waits in readPixels for the GPU to
   * finish the current view.
   */
  requestTiles() {
    this.map.style._updateSources(this.map._camera.transform);
  }

  /**
   * Ask for the tiles of `view` ({width, height, center, zoom}) without touching the canvas: the tile
   * managers are updated with a copy of the camera at the view's size and place. For a next view of
   * another size than the current one, whose canvas may not be resized before the current view's
   * pixels are read (a resize clears the drawing buffer). `LngLat`: maplibregl.LngLat.
   */
  requestTilesAt(view, LngLat) {
    const t = this.map._camera.transform.clone();
    t.resize(view.width, view.height, false);
    t.setZoom(view.zoom);
    t.setCenter(new LngLat(view.center[0], view.center[1]));
    this.map.style._updateSources(t);
  }

  /**
   * Resolve once the tile requests of the view just begun have gone out, staying in the current
   * task. MapLibre asks for a tile (loadTile) only after a few awaits (transformRequest, overzoom
   * parameters, worker start-up): those continuations are microtasks, and a synchronous readPixels
   * right after the jump held them until the GPU had finished the previous view, so the tile worker
   * sat idle while SwiftShader drew. Awaiting here runs them first; no task runs in between, so
   * nothing is painted over the pixels still to be read. A tile counts as sent once MapLibre has
   * given it an abort controller.
   */
  async tileRequestsSent() {
    for (let i = 0; i < MAX_REQUEST_TICKS && this.hasUnsentTiles(); i++) await null;
  }

  /** True when a tile of the current view is loading but its request has not been sent yet. */
  hasUnsentTiles() {
    for (const manager of Object.values(this.tileManagers())) {
      for (const key of manager.getIds()) {
        const tile = manager.getTileByID(key);
        if (tile && tile.state === 'loading' && !tile.abortController && !tile.aborted) return true;
      }
    }
    return false;
  }

  /**
   * The pixels of rectangle `r` (device pixels; the crop is symmetric, so the same from the top or
   * the bottom) of the frame just drawn, read with gl.readPixels (measured ~12 % faster per metatile
   * than copying the canvas into a 2D canvas): RGBA rows, bottom row first, premultiplied by alpha,
   * as WebGL's drawing buffer holds them (the node side flips and un-premultiplies: lib/raster-encode.ts).
   */
  readPixels(r) {
    const context = this.map.painter.context;
    const gl = context.gl;
    context.bindFramebuffer.set(null);
    const pixels = new Uint8Array(r.width * r.height * 4);
    gl.readPixels(r.x, r.y, r.width, r.height, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
    return pixels;
  }
}

/**
 * Lay the dash atlas out afresh for the frame about to be painted. MapLibre adds a row to
 * `style.lineAtlas` for each `line-dasharray` the first time it is drawn, so a pattern's row (and its
 * texture sampling: ±1 in a few pixels of dashed lines) depended on which zooms and layers this page
 * had drawn before. Emptied before each painted frame, the atlas is refilled in the frame's draw order,
 * a function of the view alone. Data-driven dasharrays are laid out by the worker into the tiles'
 * vertex data (rows in tile arrival order); emptying the atlas would break those, so a style that has
 * one keeps the atlas (order-dependent, as it always was).
 */
function freshDashAtlas(style) {
  const atlas = style.lineAtlas;
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
