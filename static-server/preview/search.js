// The panel's search box: GET /search as the user types (near the map's centre, in the label language
// chosen), the answers listed; choosing one flies the map there (to its extent when it has one) and marks it.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { $, authFetch, baseUrl, el, setStatus, state } from './session.js';

/** Wait this long after the last key before asking. */
const DEBOUNCE_MS = 150;
const LIMIT = 8;
/** Zoom the map flies to for a point without an extent. */
const POINT_ZOOM = 16;

let timer;
let asked = 0;
let marker;

/** A feature's label: its name, or the address of a house. */
function labelOf(p) {
  return p.name ?? [p.street, p.housenumber].filter(Boolean).join(' ');
}

/** Fly to feature `f` and mark it. */
function choose(f) {
  const [lon, lat] = f.geometry.coordinates;
  const e = f.properties.extent;
  // Photon's extent is [west, north, east, south].
  if (e && (e[0] !== e[2] || e[1] !== e[3])) state.map.fitBounds([[e[0], e[3]], [e[2], e[1]]], { padding: 40, maxZoom: POINT_ZOOM });
  else state.map.flyTo({ center: [lon, lat], zoom: Math.max(state.map.getZoom(), POINT_ZOOM) });
  marker ??= new maplibregl.Marker();
  marker.setLngLat([lon, lat]).addTo(state.map);
  $('search-results').dataset.chosen = labelOf(f.properties);
}

/** Ask for `q` and list the answers (a later answer replaces an earlier one, never the other way round). */
async function ask(q) {
  const id = ++asked;
  const c = state.map.getCenter();
  const params = new URLSearchParams({ q, limit: String(LIMIT), near: `${c.lng.toFixed(5)},${c.lat.toFixed(5)}` });
  if (state.language) params.set('lang', state.language);
  let res;
  try {
    res = await authFetch(`${baseUrl()}/search?${params}`);
  } catch {
    return;
  }
  if (id !== asked) return;
  const list = $('search-results');
  if (!res.ok) {
    list.replaceChildren();
    setStatus(`Search: ${(await res.json().catch(() => ({}))).error ?? `HTTP ${res.status}`}`);
    return;
  }
  const { features } = await res.json();
  list.replaceChildren(
    ...features.map((f) => {
      const li = el('li');
      const b = el('button', { type: 'button', class: 'link' }, labelOf(f.properties));
      b.addEventListener('click', () => choose(f));
      li.append(b, el('span', { class: 'kind' }, [f.properties.kind, f.properties.city].filter(Boolean).join(' · ')));
      return li;
    }),
  );
  list.dataset.answered = q;
}

/** Show the box when the build has a search index, and wire it. */
export function setUpSearch() {
  $('search-box').hidden = !state.catalog.search;
  const input = $('search');
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (q === '') {
      $('search-results').replaceChildren();
      return;
    }
    timer = setTimeout(() => void ask(q), DEBOUNCE_MS);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') $('search-results').querySelector('button')?.click();
  });
}
