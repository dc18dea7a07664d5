#!/usr/bin/env bash
# Installs what tilebake needs to build and serve: Debian packages (Chromium, GDAL, tilemaker, osmium,
# osmcoastline, fonts, a C compiler for the npm packages that build native code) and the npm packages,
# then compiles the sources to dist/. What only the tests start is installed by scripts/setup-test.sh.
# Idempotent and quick when everything is already there. Used by `make setup` (and so `make demo`,
# `make build`, `make test`) and the container image.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt.sh

# chromium-headless-shell: the renderer (Chromium without its browser UI); gdal-bin, libgdal-dev: DEMs (gdal-async links Debian's GDAL); tilemaker,
# osmium-tool, osmcoastline: OpenStreetMap input; libsqlite3-mod-spatialite: GEOS in SQLite for the search
# index's points and settlements; fonts-dejavu-core: static map labels; gcc, g++, make, python3: node-gyp
# builds of better-sqlite3 and gdal-async.
need_packages setup gcc g++ make python3 chromium-headless-shell fonts-dejavu-core fonts-noto-core fonts-noto-cjk gdal-bin libgdal-dev tilemaker osmium-tool osmcoastline libsqlite3-mod-spatialite

# gdal-async must link Debian's GDAL; without these settings it compiles its bundled GDAL (~37 min).
# They are set here only (not in .npmrc, where npm warns about unknown keys on every command), and
# .npmrc turns install scripts off, so an `npm ci` outside this script builds nothing at all.
export npm_config_build_from_source=gdal-async npm_config_shared_gdal=true
command -v gdal-config >/dev/null || { echo "setup: gdal-config missing (libgdal-dev) - refusing to build gdal-async's bundled GDAL"; exit 1; }

stamp=node_modules/.tilebake-setup
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  # npm ci empties node_modules first: through a symlink (a worktree sharing another checkout's) that
  # would wipe the other checkout's packages.
  if [ -L node_modules ]; then echo "setup: node_modules is a symlink ($(readlink node_modules)); run setup in the checkout it points to"; exit 1; fi
  echo "setup: npm ci (builds better-sqlite3 and gdal-async against Debian's GDAL, ~2-3 min the first time)"
  npm ci --ignore-scripts=false --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
node -e "if (require('gdal-async').bundled) { console.error('setup: gdal-async was built with its bundled GDAL; remove node_modules and rerun'); process.exit(1) }"

# The CLI and its worker threads compiled to dist/, so that they start without tsx (a no-op when dist/
# is current). Not when the sources are not there yet (the container image copies them after set-up).
if [ -f cli/index.ts ]; then node scripts/build-js.mjs; fi
