#!/usr/bin/env bash
# All benchmarks (not tests): each prints its figures and rewrites its RESULTS.md. Run on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== bench/serve-vector: tilebake vs tileserver-gl-light vs nginx (wrk)"
node --import tsx bench/serve-vector/run.ts
echo "== bench/render: MapLibre pre-render, metatile vs tile-by-tile"
node --import tsx bench/render/run.ts
echo "== bench/raster-formats: bytes and encoding CPU per tile of PNG, JPEG and WebP over Liechtenstein"
node --import tsx bench/raster-formats/run.ts
echo "== bench/height: elevation lookups in process and over HTTP (wrk)"
bash bench/height/run.sh
echo "== bench/soak: 5 minutes of mixed vector, raster and /height load; RSS and descriptors every 10 s"
node --import tsx bench/soak/run.ts
echo "== bench/osm: OSM extract to PMTiles, tilebake's vector stage vs the bare tilemaker"
node --import tsx bench/osm/run.ts
echo "== bench/terrain: terrain and contour tiles/s, two distant DEMs, index over 100 files"
node --import tsx bench/terrain/run.ts
echo "== bench/static: tilebake export time, and the exported tree under nginx vs tilebake serve (wrk)"
node --import tsx bench/static/run.ts
echo "== bench/pack: tilebake pack rate (local and Swift) over Belize with every style, and each night's delta share"
node --import tsx bench/pack/run.ts
echo "== bench/own-data/imagery: imagery tiles/s and peak RSS over a mosaic of the shared Landsat scene, vs gdal2tiles.py --xyz"
node --import tsx bench/own-data/imagery.ts
echo "== bench/own-data/vector: features/s from a GeoPackage and from PostGIS into PMTiles, vs ogr2ogr -f MVT alone, geojson-vt and ST_AsMVT"
node --import tsx bench/own-data/vector.ts
