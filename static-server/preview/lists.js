// The panel's style and tileset lists: a button per view, the current one pressed; choosing one shows it.
import { $, el, state } from './session.js';
import { rasterFormats, styleOfView } from './views.js';

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
    tilesets.append(li);
  }
  $('terrain-box').hidden = !state.catalog.tilesets.some((t) => t.kind === 'terrain');
}
