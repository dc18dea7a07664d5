#!/usr/bin/env node
/**
 * Prepare a Natural Earth polygon table for tiling (data/naturalearth/README.md): made valid (GEOS,
 * gdal-async), clipped to the Web Mercator square, and with `--cells Z` cut into the tiles of zoom Z,
 * one feature per tile's part (a world-sized polygon of 400,000 vertices and 6,800 holes costs GEOS
 * seconds per cut; its cells cost milliseconds, and a reader of a small area reads a few cells).
 *
 *   node scripts/naturalearth-cells.mjs IN.fgb OUT.fgb [--cells 3] [--layer NAME]
 *
 * Columns are kept; the output is FlatGeobuf with coordinates as GEOS computed them.
 */
import { parseArgs } from 'node:util';
import gdalModule from 'gdal-async';

const gdal = gdalModule.default ?? gdalModule;
const { values, positionals } = parseArgs({ allowPositionals: true, options: { cells: { type: 'string' }, layer: { type: 'string' } } });
const [input, output] = positionals;
if (!input || !output) {
  console.error('usage: node scripts/naturalearth-cells.mjs IN.fgb OUT.fgb [--cells Z] [--layer NAME]');
  process.exit(2);
}
const MAX_LATITUDE = 85.0511287798066;
const tileLon = (x, z) => (x / 2 ** z) * 360 - 180;
const tileLat = (y, z) => (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / 2 ** z))) * 180) / Math.PI;
const rect = (w, s, e, n) => gdal.Geometry.fromWKT(`POLYGON((${w} ${s},${e} ${s},${e} ${n},${w} ${n},${w} ${s}))`);

/** The polygon parts of a geometry as a MultiPolygon (repair can leave lines and points beside them). */
function polygons(g) {
  const out = new gdal.MultiPolygon();
  const add = (p) => {
    const t = p.wkbType & 0xff;
    if (t === 3) out.children.add(p);
    else if (t === 6 || t === 7) for (const c of p.children) add(c);
  };
  if (g && !g.isEmpty()) add(g);
  return out;
}

const zoom = values.cells === undefined ? undefined : Number(values.cells);
const cells = [];
if (zoom === undefined) cells.push(rect(-180, -MAX_LATITUDE, 180, MAX_LATITUDE));
else for (let y = 0; y < 2 ** zoom; y++) for (let x = 0; x < 2 ** zoom; x++) cells.push(rect(tileLon(x, zoom), tileLat(y + 1, zoom), tileLon(x + 1, zoom), tileLat(y, zoom)));

const src = gdal.open(input);
const layer = src.layers.get(0);
const dst = gdal.open(output, 'w', 'FlatGeobuf');
const out = dst.layers.create(values.layer ?? layer.name, gdal.SpatialReference.fromEPSG(4326), gdal.wkbMultiPolygon);
for (const f of layer.fields.getNames()) out.fields.add(layer.fields.get(f));
let written = 0;
for (let f = layer.features.first(); f; f = layer.features.next()) {
  let g = f.getGeometry();
  if (!g) continue;
  if (!g.isValid()) g = polygons(g.makeValid());
  for (const cell of cells) {
    if (!g.getEnvelope().intersects(cell.getEnvelope())) continue;
    const part = polygons(g.intersection(cell));
    if (part.children.count() === 0) continue;
    const o = new gdal.Feature(out);
    o.fields.set(f.fields.toObject());
    o.setGeometry(part);
    out.features.add(o);
    written++;
  }
}
dst.close();
src.close();
console.log(`${output}: ${written} features`);
