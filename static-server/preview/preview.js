// tilebake's preview page: what the server serves, on a map. The page itself is public; everything it
// shows comes from the authenticated routes, with the token from `#token=` or the form (session.js).
// This module starts the map and wires the page's controls; each part lives in its own module.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { MAP_TEXT_OPTIONS } from '/maplibre/tilebake-text.mjs';
import { inspectAt } from './inspect.js';
import { renderLists, show } from './lists.js';
import { addProfileLayers, fragmentProfile, lineBounds, refreshProfile } from './profile-line.js';
import { $, askForToken, authFetch, forgetToken, HTTP_UNAUTHORIZED, ORIGIN, saveToken, setStatus, state, unauthorized } from './session.js';
import { setUpSearch } from './search.js';
import { addTerrainLayers, setTerrain, setUpTerrainToggle } from './terrain.js';
import { initialView, styleOfView } from './views.js';

/** Screens the style sheet lays out as a phone (preview.css). */
const PHONE_QUERY = '(max-width: 640px)';

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  saveToken($('token-input').value.trim());
  $('login').hidden = true;
  void start();
});
$('logout').addEventListener('click', () => {
  forgetToken();
  askForToken('Enter another token.');
});

/** Terrain (hillshade and 3D) and the profile line, added again after every style change. */
function addOverlays() {
  addTerrainLayers(state.map);
  addProfileLayers(state.map);
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
  if (!state.view) return setStatus('This build has no styles, no vector and no raster tilesets.');
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
    bounds: state.points.length > 1 ? lineBounds(state.points) : first.region,
    fitBoundsOptions: { padding: 20 },
    // Each view's sources carry their own attribution (the raster style's from the catalog, the others' from
    // their TileJSON), so the control shows what the map shows, once.
    attributionControl: { compact: true },
    transformRequest: (url) => (state.token && url.startsWith(`${ORIGIN}/`) ? { url, headers: { Authorization: `Bearer ${state.token}` } } : { url }),
    // Labels drawn as the baked tiles draw them (workers/page/map-text.mjs).
    ...MAP_TEXT_OPTIONS,
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
  setUpSearch();
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
