// The page's state and its access token: from `#token=` or the login form (sessionStorage), sent with
// every request to this server; a 401 brings the form back.

const TOKEN_KEY = 'tilebake.token';
export const ORIGIN = location.origin;
export const HTTP_UNAUTHORIZED = 401;

export const $ = (id) => document.getElementById(id);

/** The address's fragment (`#style=…&mode=…&profile=…&terrain3d=1&globe=1`), the token taken out. */
export const fragment = new URLSearchParams(location.hash.slice(1));
export const state = {
  token: fragment.get('token') ?? sessionStorage.getItem(TOKEN_KEY) ?? '',
  catalog: null,
  /** What the map shows: { kind: 'style', id, mode: 'raster' | 'vector', format }, { kind: 'inspect', id } or { kind: 'raster', id } (a raster tileset). */
  view: null,
  /** The label language chosen (`name:xx` first), '' for the style's own labels. */
  language: fragment.get('language') ?? '',
  /** The vector tile encoding the map loads where a tileset has it: 'mvt' or 'mlt'. */
  encoding: fragment.get('encoding') === 'mlt' ? 'mlt' : 'mvt',
  /** Whether the map is drawn on MapLibre's globe (`#globe=1`) rather than in Web Mercator. */
  globe: fragment.get('globe') === '1',
  terrain: false,
  /** Whether the terrain toggle also turns on 3D terrain (not on a software-rendered WebGL, see terrain.js). */
  terrain3d: true,
  drawing: false,
  /** The profile line, [lon, lat] points. */
  points: [],
  map: null,
};
/** Show `fragment` in the address bar, replacing the history entry. */
export function writeFragment() {
  history.replaceState(null, '', `${location.pathname}${location.search}${fragment.size ? `#${fragment}` : ''}`);
}

// The token leaves the address bar (and the history) at once; the rest of the fragment stays.
if (fragment.has('token')) {
  sessionStorage.setItem(TOKEN_KEY, state.token);
  fragment.delete('token');
  writeFragment();
}

/** Keep `token` for this tab. */
export function saveToken(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Forget the tab's token. */
export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** The login form, with a message (an error after a 401). */
export function askForToken(message, error = false) {
  const msg = $('login-message');
  msg.textContent = message;
  msg.classList.toggle('error', error);
  $('login').hidden = false;
  $('token-input').focus();
}

export function unauthorized() {
  forgetToken();
  askForToken('The server did not accept this token (401). Enter a valid one.', true);
}

/** Where the server's documents and tiles are: the catalog's base URL (it names the build), else this origin. */
export function baseUrl() {
  return state.catalog?.baseUrl ?? ORIGIN;
}

/** A fetch to this server with the token (none with an origin key: the browser's Origin/Referer is the key). */
export async function authFetch(path, init = {}) {
  const headers = state.token ? { ...init.headers, authorization: `Bearer ${state.token}` } : init.headers;
  const res = await fetch(path, { ...init, headers });
  if (res.status === HTTP_UNAUTHORIZED) {
    unauthorized();
    throw new Error('unauthorized');
  }
  return res;
}

export function setStatus(text) {
  $('status').textContent = text;
}

export function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
