// tilebake render page: patches of MapLibre GL JS internals. They make a view's pixels a function of
// the view alone, whatever the page drew before (symbol placement, tiles held for fading, the dash
// atlas, zoom history), and a view cheaper to draw (one painted frame, no shading of the cropped
// margin). Each checks the internals it uses, so that a MapLibre upgrade fails loudly instead of
// rendering differently.

/**
 * Place symbols once per view, from nothing, when every tile is loaded.
 * - MapLibre seeds each placement with the previous one (a label keeps its previous anchor or offset,
 *   for stability while panning), so the labels of the final frame would depend on the order in which
 *   tiles arrived. With `fadeDuration: 0` every frame is a full placement anyway: the history is dropped.
 * - Tiles kept from the previous view: a tile that is no longer ideal but has symbols is "held for
 *   fade" for one more frame, and MapLibre releases held tiles only *after* painting the frame that goes
 *   idle, so the final frame would still place and draw the previous view's labels (placement goes from
 *   the highest zoom down: a z12 child's "MONACO" won over the ideal z11 tile's). With nothing to fade,
 *   held tiles are released before placing: every placement sees only the tiles of the current view.
 * - Frames while tiles are still loading are never painted (paintOnlyWhenLoaded), so they are not
 *   placed either: the cross-tile symbol index and the placement see the complete set of tiles once.
 * - A placement run in the frame where new symbol buckets arrived is marked stale and MapLibre places
 *   everything again in one more frame. The forced full placement already covers every bucket and,
 *   without history, the repeat gives the same result: the staleness is cleared so that the frame is
 *   painted and the map goes idle at once.
 * Internal API, guarded so that a MapLibre upgrade fails loudly instead of rendering differently.
 */
export function placeOncePerView(map) {
  const style = map.style;
  if (style.__tilebakePlacement) return;
  const update = style._updatePlacement;
  if (typeof update !== 'function') {
    throw new Error('MapLibre internals changed: style._updatePlacement is missing');
  }
  if (typeof style._releaseSymbolFadeTiles !== 'function') {
    throw new Error('MapLibre internals changed: style._releaseSymbolFadeTiles is missing');
  }
  style._updatePlacement = function (...args) {
    // Loading frames keep the last placement (the painter needs one) and are not painted.
    if (this.placement && !map.areTilesLoaded()) return false;
    this.pauseablePlacement = undefined;
    this.placement = undefined;
    this._releaseSymbolFadeTiles();
    update.apply(this, args);
    const placement = this.placement;
    if (!this.pauseablePlacement || !this.pauseablePlacement.isDone() || !placement || typeof placement.stale !== 'boolean') {
      throw new Error('MapLibre internals changed: a forced full placement did not finish in one frame');
    }
    placement.stale = false;
    return placement.hasTransitions(performance.now());
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
export function forgetZoomHistory(map) {
  const history = map.style.zoomHistory;
  if (!history || typeof history.first !== 'boolean' || typeof map._update !== 'function') {
    throw new Error('MapLibre internals changed: style.zoomHistory.first or map._update is missing');
  }
  history.first = true;
  map._update(true);
}

/**
 * Paint only the frame the map goes idle with. Tiles of a new view arrive over several frames and
 * MapLibre would paint each one in full (~100 ms at 1152² in SwiftShader) although only the last is
 * read: a frame is painted only when every tile is loaded and nothing (sources, style, placement)
 * asks for another frame. Tile bookkeeping still runs every frame. Each painted frame starts with a
 * fresh dash atlas (freshDashAtlas). Internal API, guarded so that a MapLibre upgrade fails loudly.
 */
export function paintOnlyWhenLoaded(map) {
  const painter = map.painter;
  if (painter.__tilebakePaint) return;
  const paint = painter.render;
  if (typeof paint !== 'function') throw new Error('MapLibre internals changed: map.painter.render is missing');
  if (typeof map._placementDirty !== 'boolean' || typeof map._sourcesDirty !== 'boolean' || typeof map._styleDirty !== 'boolean') {
    throw new Error('MapLibre internals changed: map._placementDirty / _sourcesDirty / _styleDirty are missing');
  }
  painter.render = function (style, ...args) {
    if (!map.areTilesLoaded() || map._placementDirty || map._sourcesDirty || map._styleDirty) return undefined;
    freshDashAtlas(style);
    return paint.call(this, style, ...args);
  };
  painter.__tilebakePaint = true;
}

/** The part of the drawing buffer the current view reads (device pixels), or null for all of it. */
let scissorRect = null;

/**
 * Rasterise only the part of the canvas that is read (`crop` device pixels in from every side): the
 * metatile without its margin. The margin stays in the view (MapLibre places labels and icons over
 * the whole canvas, so a label near the metatile's edge is placed as its neighbour places it), but
 * its pixels are cropped away anyway, and shading them cost SwiftShader a fifth of a 4×4 metatile's
 * fragments and over half of a single tile's. A scissor test on the default framebuffer only:
 * MapLibre's offscreen passes (hillshade, heatmap, layer opacity) draw into framebuffers of their own
 * sizes, which are left whole. MapLibre itself uses no scissor (only its debug drawing). Call after
 * the canvas has its size. Internal API (context.bindFramebuffer), guarded.
 */
export function rasteriseReadAreaOnly(map, crop) {
  const context = map.painter && map.painter.context;
  const gl = context && context.gl;
  const bind = context && context.bindFramebuffer;
  if (!gl || !bind || typeof bind.set !== 'function') throw new Error('MapLibre internals changed: map.painter.context.bindFramebuffer is missing');
  const canvas = map.getCanvas();
  const inner = { x: crop, y: crop, width: canvas.width - 2 * crop, height: canvas.height - 2 * crop };
  // No crop, or one that leaves nothing (render() reports that): the whole canvas.
  scissorRect = crop > 0 && inner.width > 0 && inner.height > 0 ? inner : null;
  if (bind.__tilebakeScissor) return;
  const set = bind.set;
  bind.set = function (framebuffer) {
    set.call(this, framebuffer);
    if (framebuffer === null && scissorRect) {
      gl.enable(gl.SCISSOR_TEST);
      gl.scissor(scissorRect.x, scissorRect.y, scissorRect.width, scissorRect.height);
    } else {
      gl.disable(gl.SCISSOR_TEST);
    }
  };
  bind.__tilebakeScissor = true;
}

/** The tile manager of every source (internal API; guarded so a MapLibre upgrade fails loudly). */
function tileManagers(map) {
  const managers = map.style && map.style.tileManagers;
  if (!managers) throw new Error('MapLibre internals changed: map.style.tileManagers is missing');
  return Object.values(managers);
}

/** Drop every loaded tile of every source (internal API; guarded so a MapLibre upgrade fails loudly). */
export function resetTiles(map) {
  for (const manager of tileManagers(map)) manager.clearTiles();
}

/** Microtask turns tileRequestsSent waits at most (MapLibre needs ~7 per tile; each costs microseconds). */
const MAX_REQUEST_TICKS = 100;

/** True when a tile of the current view is loading but its request has not been sent yet. */
function hasUnsentTiles(map) {
  for (const manager of tileManagers(map)) {
    if (typeof manager.getIds !== 'function' || typeof manager.getTileByID !== 'function') {
      throw new Error('MapLibre internals changed: tileManager.getIds / getTileByID are missing');
    }
    for (const key of manager.getIds()) {
      const tile = manager.getTileByID(key);
      if (tile && tile.state === 'loading' && !tile.abortController && !tile.aborted) return true;
    }
  }
  return false;
}

/**
 * Resolve once the tile requests of the view just begun have gone out, staying in the current task.
 * MapLibre asks for a tile (loadTile) only after a few awaits (transformRequest, overzoom parameters,
 * worker start-up): those continuations are microtasks, and a synchronous readPixels right after the
 * jump held them until the GPU had finished the previous view, so the tile worker sat idle while
 * SwiftShader drew. Awaiting here runs them first; no task runs in between, so nothing is painted over
 * the pixels still to be read. A tile counts as sent once MapLibre has given it an abort controller.
 */
export async function tileRequestsSent(map) {
  for (let i = 0; i < MAX_REQUEST_TICKS && hasUnsentTiles(map); i++) await null;
}
