# tilebake: `make demo` builds the embedded sample and serves it; `make test` runs the tests.
SHELL := /bin/bash
CONFIG ?= data/sample/config.json
OUT ?= build/sample
PORT ?= 8080
TILEBAKE := node bin/tilebake.js

.PHONY: setup setup-test build-js demo build test typecheck bench clean

# What tilebake needs to build and serve (Debian packages, npm packages, dist/), then the sample's glyph
# PBFs from Debian's Noto fonts (scripts/glyphs.ts; a no-op while the fonts are unchanged).
setup:
	@bash scripts/setup.sh
	@if [ -f pipeline/glyphs/generate.ts ]; then node --import tsx scripts/glyphs.ts; fi

# What only the tests and benchmarks start (nginx, wrk, Slurm, Swift, Redis), on top of setup.
setup-test: setup
	@bash scripts/setup-test.sh

# The CLI and its worker threads as compiled JavaScript in dist/ (also run by setup; a no-op when current).
build-js:
	@node scripts/build-js.mjs

build: setup
	$(TILEBAKE) build --config $(CONFIG) --out $(OUT)

demo: build
	@bash scripts/demo.sh $(OUT) $(PORT)

typecheck: setup
	node_modules/.bin/tsc -p tsconfig.json

test: setup-test typecheck
	@mkdir -p build && rm -f build/test-cpu.jsonl
	@start=$$(date +%s); status=0; \
	node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile=build/test-results.json || status=$$?; \
	node scripts/test-summary.mjs build/test-results.json $$(( $$(date +%s) - start )); exit $$status

bench: setup-test
	bash bench/run-all.sh

clean:
	rm -rf build dist
