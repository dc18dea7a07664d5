// The inspector's popup: the attributes of the features under a click.
import * as maplibregl from '/maplibre/maplibre-gl.mjs';
import { el, state } from './session.js';

/** A popup with the attributes of the features under a click (inspector). */
export function inspectAt(e) {
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
