# Thin wrappers. The test command is ./scripts/test.sh; see docs/testing.md.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c

# Passed to scripts/test.sh, e.g. make test ARGS='-run Foo ./store/...'
ARGS ?=
# How long `make fuzz` runs each fuzz target, and where it looks for them.
FUZZTIME ?= 10s
FUZZPKGS ?= ./...

.PHONY: test fuzz help

## test: run everything (gofmt, go vet, staticcheck, go test -race): ./scripts/test.sh $(ARGS)
test:
	./scripts/test.sh $(ARGS)

## fuzz: run each fuzz target in $(FUZZPKGS) for $(FUZZTIME), one after another
fuzz:
	@targets=$$(go test -list '^Fuzz' $(FUZZPKGS) | \
		awk '/^Fuzz/ { names[n++] = $$1; next } /^ok/ { for (i = 0; i < n; i++) print $$2, names[i]; n = 0 }'); \
	if [[ -z $$targets ]]; then echo "make fuzz: no fuzz targets in $(FUZZPKGS)"; exit 0; fi; \
	failed=(); \
	while read -r pkg name; do \
		echo "==> $$pkg $$name (-fuzztime $(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg" </dev/null || failed+=("$$pkg $$name"); \
	done <<< "$$targets"; \
	total=$$(wc -l <<< "$$targets"); \
	if (( $${#failed[@]} > 0 )); then \
		printf 'make fuzz: FAIL: %s\n' "$${failed[@]}"; \
		echo "fuzz: $$((total - $${#failed[@]})) passed, $${#failed[@]} failed"; exit 1; \
	fi; \
	echo "fuzz: $$total passed, 0 failed"

## help: list the targets
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)
