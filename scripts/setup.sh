#!/usr/bin/env bash
# Installs what tilebake needs: Debian packages (Chromium, GDAL, nginx, wrk, a C compiler) and the npm
# packages, compiles the native addon (lib/native/) and the sources to dist/.
# Idempotent and quick when everything is already there. Used by `make setup` and `.ci/run`.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the renderer and browser tests; gdal: DEMs and the WMTS client test; nginx, wrk: static hosting,
# replication files over HTTP and benchmarks; tilemaker, osmium, osmcoastline: OpenStreetMap input;
# slurm-wlm, munge: the one-node Slurm cluster of the distributed-build tests; swift-*, memcached: the
# S3-compatible object store (Swift's s3api) of the same tests; redis-server: shared key limits;
# gcc, g++, make, python3: node-gyp builds (better-sqlite3, gdal-async, tilebake's PNG encoder).
APT_PACKAGES=(gcc g++ make python3 chromium fonts-dejavu-core gdal-bin libgdal-dev nginx-light wrk sqlite3 tilemaker osmium-tool osmcoastline
  slurm-wlm munge swift swift-proxy swift-object swift-container swift-account memcached redis-server)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    bash -c "$cmd" >/tmp/tilebake-apt.log 2>&1 || { tail -30 /tmp/tilebake-apt.log; echo "setup: apt-get failed (log: /tmp/tilebake-apt.log)"; exit 1; }
  else
    echo "setup: missing Debian packages: ${missing[*]}. Run as root:"
    echo "  sudo sh -c '$cmd'"
    exit 1
  fi
fi

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

# The native addon (lib/native.ts: PNG encoder, resamplers, overlays; a no-op when current). Not when the sources are not there
# yet (the container image copies them after set-up and builds it then).
if [ -d lib/native ]; then node scripts/build-native.mjs; fi

# The CLI and its worker threads compiled to dist/, so that they start without tsx (a no-op when dist/
# is current). Not when the sources are not there yet (the container image copies them after set-up).
if [ -f cli/index.ts ]; then node scripts/build-js.mjs; fi
