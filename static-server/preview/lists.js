// The panel's style and tileset lists: a button per view, the current one pressed; choosing one shows it.
import { $, el, fragment, state, writeFragment } from './session.js';
import { bakedStyleOf, rasterFormats, styleOfView } from './views.js';

/** Show `view` on the map and press its button. */
export function show(view) {
  state.view = view;
  state.map.setStyle(styleOfView());
  renderLists();
}

function modeButton(label, pressed, onClick) {
  const b = el('button', { type: 'button', 'aria-pressed': String(pressed) }, label);
  b.addEventListener('click', onClick);
  return b;
}

/** Show a raster tileset's images, moving the map to them when they are not in view. */
function showRaster(t) {
  show({ kind: 'raster', id: t.id });
  const c = state.map.getCenter();
  const [w, s, e, n] = t.region;
  if (c.lng < w || c.lng > e || c.lat < s || c.lat > n) state.map.fitBounds(t.region, { padding: 20, animate: false });
}

/** The style and tileset lists, with the current view pressed. */
export function renderLists() {
  const v = state.view;
  const styles = $('style-list');
  styles.replaceChildren();
  for (const s of state.catalog.styles) {
    const li = el('li');
    li.dataset.style = s.id;
    li.append(el('span', { class: 'name' }, s.name));
    const formats = rasterFormats(s);
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
    if (t.kind === 'raster') li.append(modeButton('Show', v.kind === 'raster' && v.id === t.id, () => showRaster(t)));
    tilesets.append(li);
  }
  $('terrain-box').hidden = !state.catalog.tilesets.some((t) => t.kind === 'terrain');
  renderLanguages();
  renderEncoding();
  renderGlobe();
}

/** A language's name in the reader's own language where the browser knows the code (`de — German`). */
function languageLabel(code) {
  try {
    const name = new Intl.DisplayNames([navigator.language], { type: 'language' }).of(code);
    return name && name !== code ? `${code} — ${name}` : code;
  } catch {
    return code; // not a BCP 47 tag (ja_kana)
  }
}

/** The label language menu of the current style: the languages its tiles carry and those baked. */
function renderLanguages() {
  const v = state.view;
  const style = v.kind === 'style' ? state.catalog.styles.find((s) => s.id === v.id) : undefined;
  const codes = style ? [...new Set([...style.languages, ...Object.keys(style.baked ?? {})])].sort() : [];
  $('language-box').hidden = codes.length === 0;
  if (!style) return;
  const select = $('language');
  select.replaceChildren(el('option', { value: '' }, "the style's own"));
  for (const c of codes) select.append(el('option', c === state.language ? { value: c, selected: '' } : { value: c }, languageLabel(c)));
  select.onchange = () => {
    state.language = select.value;
    if (state.language) fragment.set('language', state.language);
    else fragment.delete('language');
    writeFragment();
    show(state.view);
  };
  // Raster tiles show a language only where a variant was baked in it.
  const note = $('language-note');
  const unbaked = v.mode === 'raster' && state.language && bakedStyleOf(style, v.format) === style && style.language !== state.language;
  note.hidden = !unbaked;
  note.textContent = unbaked ? `No raster tiles of this style are baked in ${state.language}: they show its own labels; Vector draws them in ${state.language}.` : '';
}

/** The MVT / MLT switch: shown for views drawn from vector tiles when a tileset of the build has MLT tiles. */
function renderEncoding() {
  const v = state.view;
  const vector = v && (v.kind === 'inspect' || v.mode === 'vector');
  const mlt = state.catalog.tilesets.some((t) => (v.kind !== 'inspect' || t.id === v.id) && (t.encodings ?? []).includes('mlt'));
  $('encoding-box').hidden = !(vector && mlt);
  const select = $('encoding');
  select.value = state.encoding;
  select.onchange = () => {
    state.encoding = select.value;
    if (state.encoding === 'mlt') fragment.set('encoding', 'mlt');
    else fragment.delete('encoding');
    writeFragment();
    show(state.view);
  };
}

/** The globe switch: every view can be drawn on MapLibre's globe (styles from vector tiles and raster tiles alike). */
function renderGlobe() {
  $('globe-box').hidden = !state.view;
  const box = $('globe');
  box.checked = state.globe;
  box.onchange = () => {
    state.globe = box.checked;
    if (state.globe) fragment.set('globe', '1');
    else fragment.delete('globe');
    writeFragment();
    show(state.view);
  };
}
