// tilebake's preview page: what the server serves, on a map. The page itself is public; everything it
// shows comes from the authenticated routes, with the token from `#token=` or the form (sessionStorage).
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { drawProfile, profileRequest } from './profile.js';

const TOKEN_KEY = 'tilebake.token';
const ORIGIN = location.origin;
const $ = (id) => document.getElementById(id);
const HTTP_UNAUTHORIZED = 401;
/** Ids of what the page adds on top of a style. */
const DEM = 'tilebake-dem';
const DEM_3D = 'tilebake-dem-3d';
const HILLSHADE = 'tilebake-hillshade';
const PROFILE = 'tilebake-profile';
const TERRAIN_EXAGGERATION = 1.5;
const TERRAIN_PITCH = 60;
/**
 * WebGL renderers that rasterise on the CPU. MapLibre's 3D terrain draws every visible tile into a
 * 1024 px texture and the surface into depth buffers each frame: under SwiftShader (headless Chromium,
 * machines without a GPU) one such frame was measured at 2-20 s, during which the page does not react
 * (docs/preview.md). There the terrain toggle shows the hillshade only; `#terrain3d=1` forces 3D.
 */
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software|basic render driver/i;
/** Screens the style sheet lays out as a phone (preview.css). */
const PHONE_QUERY = '(max-width: 640px)';

const fragment = new URLSearchParams(location.hash.slice(1));
const state = {
  token: fragment.get('token') ?? sessionStorage.getItem(TOKEN_KEY) ?? '',
  catalog: null,
  /** What the map shows: { kind: 'style', id, mode: 'raster' | 'vector', format } or { kind: 'inspect', id }. */
  view: null,
  terrain: false,
  /** Whether the terrain toggle also turns on 3D terrain (not on a software-rendered WebGL, see SOFTWARE_GL). */
  terrain3d: true,
  drawing: false,
  /** The profile line, [lon, lat] points. */
  points: [],
  map: null,
};
// The token leaves the address bar (and the history) at once; the rest of the fragment stays.
if (fragment.has('token')) {
  sessionStorage.setItem(TOKEN_KEY, state.token);
  fragment.delete('token');
  history.replaceState(null, '', `${location.pathname}${location.search}${fragment.size ? `#${fragment}` : ''}`);
}

/** The login form, with a message (an error after a 401). */
function askForToken(message, error = false) {
  const msg = $('login-message');
  msg.textContent = message;
  msg.classList.toggle('error', error);
  $('login').hidden = false;
  $('token-input').focus();
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  state.token = $('token-input').value.trim();
  sessionStorage.setItem(TOKEN_KEY, state.token);
  $('login').hidden = true;
  void start();
});
$('logout').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  askForToken('Enter another token.');
});

function unauthorized() {
  sessionStorage.removeItem(TOKEN_KEY);
  askForToken('The server did not accept this token (401). Enter a valid one.', true);
}

/** Where the server's documents and tiles are: the catalog's base URL (it names the build), else this origin. */
function baseUrl() {
  return state.catalog?.baseUrl ?? ORIGIN;
}

/** A fetch to this server with the token (none with an origin key: the browser's Origin/Referer is the key). */
async function authFetch(path, init = {}) {
  const headers = state.token ? { ...init.headers, authorization: `Bearer ${state.token}` } : init.headers;
  const res = await fetch(path, { ...init, headers });
  if (res.status === HTTP_UNAUTHORIZED) {
    unauthorized();
    throw new Error('unauthorized');
  }
  return res;
}

function setStatus(text) {
  $('status').textContent = text;
}

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The raster tiles of a style: @2x on high-density screens when built, in the chosen format. */
function rasterStyle(style, format) {
  const scales = style.rasters.filter((k) => k.endsWith(`.${format}`)).map((k) => Number(k[0]));
  const scale = window.devicePixelRatio > 1 && scales.includes(2) ? 2 : scales.includes(1) ? 1 : 2;
  return {
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
  };
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
  return { version: 8, sources: { inspect: { type: 'vector', url: `${baseUrl()}/data/${encodeURIComponent(tileset.id)}.json` } }, layers };
}

/** The style document (or URL) of the current view. */
function styleOfView() {
  const v = state.view;
  if (v.kind === 'inspect') return inspectStyle(state.catalog.tilesets.find((t) => t.id === v.id));
  const style = state.catalog.styles.find((s) => s.id === v.id);
  return v.mode === 'raster' ? rasterStyle(style, v.format) : `${baseUrl()}/styles/${encodeURIComponent(style.id)}/style.json`;
}

function show(view) {
  state.view = view;
  state.map.setStyle(styleOfView());
  renderLists();
}

/** Terrain (hillshade and 3D) and the profile line, added again after every style change. */
function addOverlays() {
  const map = state.map;
  const terrain = state.catalog.tilesets.find((t) => t.kind === 'terrain');
  if (state.terrain && terrain) {
    const dem = { type: 'raster-dem', url: `${baseUrl()}/data/${encodeURIComponent(terrain.id)}.json`, tileSize: 256, encoding: terrain.encoding ?? 'terrarium' };
    // Separate sources for the hillshade and the 3D surface (MapLibre draws each better so).
    if (!map.getSource(DEM)) map.addSource(DEM, dem);
    if (state.terrain3d && !map.getSource(DEM_3D)) map.addSource(DEM_3D, dem);
    const firstSymbol = map.getStyle().layers.find((l) => l.type === 'symbol')?.id;
    if (!map.getLayer(HILLSHADE)) map.addLayer({ id: HILLSHADE, type: 'hillshade', source: DEM, paint: { 'hillshade-exaggeration': 0.4 } }, firstSymbol);
    if (state.terrain3d) map.setTerrain({ source: DEM_3D, exaggeration: TERRAIN_EXAGGERATION });
  }
  if (!map.getSource(PROFILE)) map.addSource(PROFILE, { type: 'geojson', data: profileGeoJson() });
  if (!map.getLayer(`${PROFILE}-line`)) {
    map.addLayer({ id: `${PROFILE}-line`, type: 'line', source: PROFILE, paint: { 'line-color': '#e4572e', 'line-width': 3 } });
    map.addLayer({ id: `${PROFILE}-points`, type: 'circle', source: PROFILE, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': '#fff', 'circle-stroke-color': '#e4572e', 'circle-stroke-width': 2, 'circle-radius': 4 } });
  }
}

function setTerrain(on) {
  state.terrain = on;
  const map = state.map;
  if (on) {
    addOverlays();
    if (state.terrain3d) map.easeTo({ pitch: TERRAIN_PITCH });
  } else {
    const was3d = !!map.getTerrain();
    if (was3d) map.setTerrain(null);
    if (map.getLayer(HILLSHADE)) map.removeLayer(HILLSHADE);
    for (const s of [DEM, DEM_3D]) if (map.getSource(s)) map.removeSource(s);
    if (was3d) map.easeTo({ pitch: 0 });
  }
}

/** Whether the browser's WebGL rasterises on the CPU (SOFTWARE_GL), from the renderer's unmasked name. */
function softwareWebGl() {
  const gl = document.createElement('canvas').getContext('webgl2') ?? document.createElement('canvas').getContext('webgl');
  if (!gl) return true;
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  gl.getExtension('WEBGL_lose_context')?.loseContext();
  return SOFTWARE_GL.test(renderer);
}

function profileGeoJson() {
  const features = state.points.map((p) => ({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: p } }));
  if (state.points.length > 1) features.push({ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: state.points } });
  return { type: 'FeatureCollection', features };
}

/** Redraw the line and ask /height for its profile. */
let profileRun = 0;
async function updateProfile() {
  state.map.getSource(PROFILE)?.setData(profileGeoJson());
  const box = $('chart');
  const help = $('profile-help');
  if (state.points.length < 2) {
    box.replaceChildren();
    delete box.dataset.distance;
    help.textContent = state.drawing ? 'Click the map to add points.' : 'Draw a line on the map to see its elevation profile.';
    return;
  }
  help.textContent = `${state.points.length} points${state.drawing ? ' (click to add more)' : ''}`;
  const run = ++profileRun;
  const res = await authFetch('/height', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(profileRequest(state.points)) });
  const body = await res.json();
  if (run !== profileRun) return;
  if (!res.ok) {
    box.replaceChildren(el('p', { class: 'muted' }, `No profile: ${body.error ?? res.status}`));
    return;
  }
  drawProfile(box, body.range_height);
}

/** updateProfile, its failures shown in the panel (a 401 has brought the form back already). */
function refreshProfile() {
  updateProfile().catch((e) => {
    if (e.message !== 'unauthorized') setStatus(`Profile: ${e.message}`);
  });
}

/** A popup with the attributes of the features under a click (inspector). */
function inspectAt(e) {
  const map = state.map;
  const box = [
    [e.point.x - 4, e.point.y - 4],
    [e.point.x + 4, e.point.y + 4],
  ];
  const features = map.queryRenderedFeatures(box).filter((f) => f.source === 'inspect');
  if (!features.length) return;
  const table = el('table');
  const seen = new Set();
  for (const f of features.slice(0, 10)) {
    const key = `${f.sourceLayer}/${f.id}/${JSON.stringify(f.properties)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const head = el('tr');
    head.append(el('th', { colspan: '2' }, `${f.sourceLayer} (${f.geometry.type})`));
    table.append(head);
    for (const [k, v] of Object.entries(f.properties)) {
      const row = el('tr');
      row.append(el('td', {}, k), el('td', {}, String(v)));
      table.append(row);
    }
  }
  new maplibregl.Popup({ maxWidth: '320px' }).setLngLat(e.lngLat).setDOMContent(table).addTo(map);
}

function modeButton(label, pressed, onClick) {
  const b = el('button', { type: 'button', 'aria-pressed': String(pressed) }, label);
  b.addEventListener('click', onClick);
  return b;
}

/** The style and tileset lists, with the current view pressed. */
function renderLists() {
  const v = state.view;
  const styles = $('style-list');
  styles.replaceChildren();
  for (const s of state.catalog.styles) {
    const li = el('li');
    li.dataset.style = s.id;
    li.append(el('span', { class: 'name' }, s.name));
    const formats = [...new Set(s.rasters.map((k) => k.split('.')[1]))];
    const current = v.kind === 'style' && v.id === s.id;
    const format = current && v.format ? v.format : formats.includes('png') ? 'png' : formats[0];
    if (formats.length) {
      li.append(modeButton('Raster', current && v.mode === 'raster', () => show({ kind: 'style', id: s.id, mode: 'raster', format })));
      if (formats.length > 1) {
        const select = el('select', { 'aria-label': `${s.name} raster format` });
        for (const f of formats) select.append(el('option', f === format ? { value: f, selected: '' } : { value: f }, f.toUpperCase()));
        select.addEventListener('change', () => show({ kind: 'style', id: s.id, mode: 'raster', format: select.value }));
        li.append(select);
      }
    }
    li.append(modeButton('Vector', current && v.mode === 'vector', () => show({ kind: 'style', id: s.id, mode: 'vector', format })));
    styles.append(li);
  }
  const tilesets = $('tileset-list');
  tilesets.replaceChildren();
  for (const t of state.catalog.tilesets) {
    const li = el('li');
    li.dataset.tileset = t.id;
    li.append(el('span', { class: 'name' }, t.name), el('span', { class: 'kind' }, `${t.kind} z${t.minzoom}–${t.maxzoom}`));
    if (t.kind === 'vector') li.append(modeButton('Inspect', v.kind === 'inspect' && v.id === t.id, () => show({ kind: 'inspect', id: t.id })));
    tilesets.append(li);
  }
  $('terrain-box').hidden = !state.catalog.tilesets.some((t) => t.kind === 'terrain');
}

/** The view the fragment asks for (`style=…&mode=raster|vector`), else the first style's raster tiles. */
function initialView(catalog) {
  const s = catalog.styles.find((x) => x.id === fragment.get('style')) ?? catalog.styles[0];
  if (!s) {
    const t = catalog.tilesets.find((x) => x.kind === 'vector');
    return t ? { kind: 'inspect', id: t.id } : null;
  }
  const formats = [...new Set(s.rasters.map((k) => k.split('.')[1]))];
  const mode = fragment.get('mode') === 'vector' || formats.length === 0 ? 'vector' : 'raster';
  return { kind: 'style', id: s.id, mode, format: formats.includes('png') ? 'png' : formats[0] };
}

/** `profile=lon,lat;lon,lat;…` from the fragment. */
function fragmentProfile() {
  const text = fragment.get('profile');
  if (!text) return [];
  return text
    .split(';')
    .map((p) => p.split(',').map(Number))
    .filter((p) => p.length === 2 && p.every(Number.isFinite));
}

let started = false;
async function start() {
  let res;
  if (!state.token) {
    // An origin key allows this page's origin: no token needed.
    res = await fetch('/catalog.json');
    if (res.status === HTTP_UNAUTHORIZED) return askForToken('This server needs an access token.');
  } else {
    try {
      res = await authFetch('/catalog.json');
    } catch {
      return;
    }
  }
  if (!res.ok) return setStatus(`Cannot read the catalog: HTTP ${res.status}`);
  const catalog = await res.json();
  state.catalog = catalog;
  $('build').textContent = `build ${catalog.build.build_id}`;
  state.view = initialView(catalog);
  if (!state.view) return setStatus('This build has no styles and no vector tilesets.');
  if (started) {
    show(state.view);
    return;
  }
  started = true;
  state.points = fragmentProfile();
  const first = catalog.styles[0] ?? catalog.tilesets[0];
  const map = new maplibregl.Map({
    container: 'map',
    style: styleOfView(),
    bounds: state.points.length > 1 ? lineBounds(state.points) : first.bounds,
    fitBoundsOptions: { padding: 20 },
    // Each view's sources carry their own attribution (the raster style's from the catalog, the others' from
    // their TileJSON), so the control shows what the map shows, once.
    attributionControl: { compact: true },
    transformRequest: (url) => (state.token && url.startsWith(`${ORIGIN}/`) ? { url, headers: { Authorization: `Bearer ${state.token}` } } : { url }),
  });
  state.map = map;
  window.tilebakePreview = { map, state };
  map.addControl(new maplibregl.NavigationControl({ visualizePitch: true }), 'top-left');
  map.addControl(new maplibregl.ScaleControl(), 'bottom-left');
  map.on('style.load', addOverlays);
  // On a phone the attribution starts folded (its ⓘ button opens it): expanded it covers much of the map.
  if (window.matchMedia(PHONE_QUERY).matches) {
    map.once('load', () => document.querySelector('.maplibregl-ctrl-attrib')?.classList.remove('maplibregl-compact-show'));
  }
  map.on('error', (e) => {
    if (e.error?.status === HTTP_UNAUTHORIZED) unauthorized();
    else setStatus(`Map: ${e.error?.message ?? 'error'}`);
  });
  map.on('click', (e) => {
    if (state.drawing) {
      state.points.push([Number(e.lngLat.lng.toFixed(6)), Number(e.lngLat.lat.toFixed(6))]);
      refreshProfile();
    } else if (state.view.kind === 'inspect') inspectAt(e);
  });
  renderLists();
  refreshProfile();
}

/** The terrain toggle's label: hillshade only, and why, on a software-rendered WebGL. */
function setUpTerrainToggle() {
  state.terrain3d = fragment.get('terrain3d') === '1' || !softwareWebGl();
  $('terrain-label').textContent = state.terrain3d ? 'Terrain: hillshade and 3D' : 'Terrain: hillshade';
  $('terrain-note').hidden = state.terrain3d;
}

function lineBounds(points) {
  const lons = points.map((p) => p[0]);
  const lats = points.map((p) => p[1]);
  return [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];
}

$('draw').addEventListener('click', () => {
  state.drawing = !state.drawing;
  $('draw').setAttribute('aria-pressed', String(state.drawing));
  document.body.classList.toggle('drawing', state.drawing);
  if (state.map) refreshProfile();
});
$('clear').addEventListener('click', () => {
  state.points = [];
  if (state.map) refreshProfile();
});
$('terrain').addEventListener('change', (e) => setTerrain(e.target.checked));

setUpTerrainToggle();

void start();
