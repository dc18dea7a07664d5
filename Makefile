# tilebake: `make demo` builds the embedded sample and serves it; `make test` runs the tests.
SHELL := /bin/bash
CONFIG ?= data/sample/config.json
OUT ?= build/sample
PORT ?= 8080
TILEBAKE := node bin/tilebake.js

.PHONY: setup setup-test build-js demo build check test typecheck bench clean

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

# The quick tier: the type-check and the test files named *.quick.test.ts (no browser, daemon, tilemaker
# or full build; test/quick-guard.mjs fails the run if one starts), about a minute on 2 cores.
check: setup typecheck
	@$(call vitest,--project quick,check)

# The whole suite (both tiers), the README's test command and CI's.
test: setup-test typecheck
	@$(call vitest,,test)

# $(call vitest,VITEST ARGS,NAME): run vitest, then print "N passed, N failed", the duration and the heaviest files.
define vitest
mkdir -p build && rm -f build/test-cpu.jsonl; \
start=$$(date +%s); status=0; \
node_modules/.bin/vitest run $(1) --reporter=default --reporter=json --outputFile=build/$(2)-results.json || status=$$?; \
node scripts/test-summary.mjs build/$(2)-results.json $$(( $$(date +%s) - start )); exit $$status
endef

bench: setup-test
	bash bench/run-all.sh

clean:
	rm -rf build dist
