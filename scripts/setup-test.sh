#!/usr/bin/env bash
# Installs what only the tests (and benchmarks) start, on top of `make setup`: nginx and wrk (static
# hosting, replication files over HTTP, load), Slurm with munge (the one-node cluster of the
# distributed-build tests), OpenStack Swift with memcached (the S3-compatible object store), Redis
# (shared key limits), PostgreSQL with PostGIS (the own-data tests' database). Their system services are
# not started: the tests start their own instances on free loopback ports and stop them by PID. Used by `make test` (and so `.ci/run`) and `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt.sh
TILEBAKE_APT_NO_SERVICES=1 need_packages setup-test nginx-light wrk slurm-wlm munge swift swift-proxy swift-object swift-container swift-account memcached redis-server postgresql-15-postgis-3
