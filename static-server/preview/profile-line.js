// The elevation profile panel: the line drawn on the map (a GeoJSON source), its /height request and
// the chart (profile.js), and the line given in the fragment.
import { drawProfile, lengthRequest, lineLength, profileRequest } from './profile.js';
import { $, authFetch, el, fragment, setStatus, state } from './session.js';

/** Id of the line's source (and prefix of its layers). */
export const PROFILE = 'tilebake-profile';

export function profileGeoJson() {
  const features = state.points.map((p) => ({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: p } }));
  if (state.points.length > 1) features.push({ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: state.points } });
  return { type: 'FeatureCollection', features };
}

/** The line's source and layers, added again after every style change. */
export function addProfileLayers(map) {
  if (!map.getSource(PROFILE)) map.addSource(PROFILE, { type: 'geojson', data: profileGeoJson() });
  if (!map.getLayer(`${PROFILE}-line`)) {
    map.addLayer({ id: `${PROFILE}-line`, type: 'line', source: PROFILE, paint: { 'line-color': '#e4572e', 'line-width': 3 } });
    map.addLayer({ id: `${PROFILE}-points`, type: 'circle', source: PROFILE, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': '#fff', 'circle-stroke-color': '#e4572e', 'circle-stroke-width': 2, 'circle-radius': 4 } });
  }
}

/** POST /height with `request`: the response and its JSON body. */
async function askHeight(request) {
  const res = await authFetch('/height', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
  return { res, body: await res.json() };
}

/** Redraw the line and ask /height for its profile: first its length (the server's distances), then heights evenly along it. */
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
  const points = [...state.points];
  let { res, body } = await askHeight(lengthRequest(points));
  if (run !== profileRun) return;
  if (res.ok) ({ res, body } = await askHeight(profileRequest(points, lineLength(body.range_height))));
  if (run !== profileRun) return;
  if (!res.ok) {
    box.replaceChildren(el('p', { class: 'muted' }, `No profile: ${body.error ?? res.status}`));
    return;
  }
  drawProfile(box, body.range_height);
}

/** updateProfile, its failures shown in the panel (a 401 has brought the form back already). */
export function refreshProfile() {
  updateProfile().catch((e) => {
    if (e.message !== 'unauthorized') setStatus(`Profile: ${e.message}`);
  });
}

/** `profile=lon,lat;lon,lat;…` from the fragment. */
export function fragmentProfile() {
  const text = fragment.get('profile');
  if (!text) return [];
  return text
    .split(';')
    .map((p) => p.split(',').map(Number))
    .filter((p) => p.length === 2 && p.every(Number.isFinite));
}

/** [w, s, e, n] of a line. */
export function lineBounds(points) {
  const lons = points.map((p) => p[0]);
  const lats = points.map((p) => p[1]);
  return [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];
}
