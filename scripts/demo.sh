#!/usr/bin/env bash
# Serves a finished build (make demo runs `tilebake build` first) with a fresh random token,
# and prints the token and example requests.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build/sample}
PORT=${2:-8080}
TOKEN=$(node -e "console.log(require('node:crypto').randomBytes(24).toString('base64url'))")
BASE="http://localhost:${PORT}"
cat <<EOT

tilebake demo: serving ${OUT} on ${BASE}
Token (valid until this server stops): ${TOKEN}

Open the preview page (the token is in the fragment, which is never sent to the server):
  ${BASE}/#token=${TOKEN}

Try:
  curl -sS -H "Authorization: Bearer ${TOKEN}" --compressed ${BASE}/data/openmaptiles/14/8529/5974.pbf -o tile.pbf -w '%{http_code} %{content_type} %{size_download} bytes\n'
  curl -sS -H "Authorization: Bearer ${TOKEN}" ${BASE}/styles/osm-bright/14/8529/5974@2x.png -o tile@2x.png -w '%{http_code} %{content_type} %{size_download} bytes\n'
  curl -sS -H "Authorization: Bearer ${TOKEN}" ${BASE}/styles/hybrid/10/292/438.jpg -o hybrid.jpg -w '%{http_code} %{content_type} %{size_download} bytes\n'
  curl -sS -H "Authorization: Bearer ${TOKEN}" ${BASE}/data/landsat/9/145/219.webp -o landsat.webp -w '%{http_code} %{content_type} %{size_download} bytes\n'
  curl -sS -H "Authorization: Bearer ${TOKEN}" -H 'Content-Type: application/json' -d '{"range":true,"shape":[{"lat":43.7384,"lon":7.4246},{"lat":43.7311,"lon":7.4197},{"lat":43.7503,"lon":7.4390}]}' ${BASE}/height

  curl -sS -H "Authorization: Bearer ${TOKEN}" ${BASE}/metrics | grep '^tilebake_http_requests_total'

TileJSON: ${BASE}/data/openmaptiles.json   Style: ${BASE}/styles/osm-bright/style.json   (same header)
Stop with Ctrl-C.

EOT
export TILEBAKE_TOKENS="${TOKEN}"
exec node bin/tilebake.js serve --out "${OUT}" --port "${PORT}" --public-url "${BASE}"
