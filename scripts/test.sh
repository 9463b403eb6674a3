#!/usr/bin/env bash
# test.sh: THE test command of agentmem. CI runs it too (.ci/run).
#
# Usage:
#
#   ./scripts/test.sh                          everything
#   ./scripts/test.sh -run Foo ./store/...     go test flags and packages pass through
#   ./scripts/test.sh -v ./tokenizer           -v prints all test output
#
# Arguments go to `go test` as given. An argument that looks like a package
# (starts with ./ or ../, is . or .., or starts with the module path) limits
# go vet and staticcheck to those packages too; with none, ./... is added.
#
# The framework adapters under adapters/ and the proxy's SDK tests
# (proxy/sdktest) are modules of their own (each has its go.mod): steps 2,
# 3 and 6 run in each of them too, on its ./... when no
# package is given, else on the packages given inside it
# (./adapters/langchaingo/...) or by a pattern that covers it (./...,
# ./adapters/...); a run given only other packages leaves them out.
#
# Steps, in order; a failing step does not stop the later ones, and the
# script exits non-zero if any failed:
#
#   1. gofmt -l on every tracked and untracked (not ignored) Go file; no
#      machine's absolute paths in tracked files (git grep)
#   2. go vet
#   3. staticcheck, a pinned version, installed into $(go env GOPATH)/bin
#      when missing
#   4. PostgreSQL: AGENTMEM_TEST_POSTGRES_URL if set, else a throwaway server
#      (scripts/pg-start.sh) when the server programs are installed; before
#      it starts, pgvector is built and installed when the server lacks it
#      (scripts/pgvector-install.sh), from PGVECTOR_SRC or else the
#      pgvector-*.tar.gz of the vendor directory (../shared/vendor beside
#      the repository); then whether the server has pgvector is reported
#   4b. Citus: AGENTMEM_TEST_CITUS_URL if set, else, when the server programs
#      are installed, Citus is built from the vendor directory (once: the
#      build is cached under ${XDG_CACHE_HOME:-~/.cache}/agentmem) and
#      installed (scripts/citus-install.sh), and a throwaway cluster of a
#      coordinator, two workers and a spare node starts
#      (scripts/citus-start.sh). Installing into the server's directories
#      needs root (or sudo -n): without, the Citus tests skip
#   5. Chromium: AGENTMEM_TEST_CHROMIUM if set, else /usr/bin/chromium (or
#      chromium / chromium-browser on PATH) when installed
#   6. go test -race -count=1, reported by internal/testenv/cmd/testrun
#   7. the Python client's suite (python3 -m unittest, clients/python/tests)
#      against the agentmem binary built here, when no packages are named
#      (or AGENTMEM_TEST_PYTHON=1); in CI python3 is installed when missing
#   8. the TypeScript client (clients/typescript): npm ci, build, and its
#      node --test suites against the agentmem binary built here, when no
#      packages are named (or AGENTMEM_TEST_TS=1); in CI nodejs and npm are
#      installed when missing
#
# Without PostgreSQL, Citus, Chromium or Node.js 20+ the tests that need them
# skip, with a reason. In CI (CI=true) nothing may be missing: the script
# installs staticcheck, Debian's postgresql, the build dependencies of
# pgvector and Citus (postgresql-server-dev-15 liblz4-dev libzstd-dev
# libkrb5-dev) and chromium (apt-get), gcc for the race detector and nodejs
# and npm when they are missing, and a failure to do so, or to build
# pgvector or Citus, fails the run.
#
# Environment (see docs/testing.md):
#
#   CI=true                      CI mode, as above
#   AGENTMEM_TEST_POSTGRES_URL   use this database instead of a throwaway server
#   AGENTMEM_TEST_CITUS_URL      use this Citus coordinator instead of a
#                                throwaway cluster (AGENTMEM_TEST_CITUS_SPARE:
#                                host:port of a node the rebalance test adds)
#   AGENTMEM_VENDOR              the vendor directory (default ../shared/vendor)
#   AGENTMEM_TEST_CHROMIUM       use this browser
#   AGENTMEM_TEST_TIMEOUT        go test -timeout for each test binary (15m);
#                                a slow machine may need more
#   AGENTMEM_TEST_DEADLINE       limit for the go test step of each module
#                                (none: each test binary has its -timeout)
#   AGENTMEM_TEST_RACE=0         run without the race detector
#   PGVECTOR_SRC                 a pgvector source tree or .tar.gz to install
#                                into the server (default: the vendor's)
#   AGENTMEM_TEST_PGVECTOR=1     the pgvector tests fail, not skip, without it
#   AGENTMEM_TEST_PYTHON=1       run the Python client's suite even when
#                                packages are named
#   AGENTMEM_TEST_TS=1 / =0      run / do not run the TypeScript client's tests
#
# Once the tests have run, the last line printed is the count:
# "tests: N passed, N failed, N skipped". The exit status is 0 only if every
# step passed.

set -euo pipefail

# The whole script is one { ... } block, so bash reads all of it before it
# runs any: editing this file during a run cannot break that run.
{

# staticcheck 2026.2.2 is module version v0.8.2: the newest the Go module
# proxy serves, and it supports Go 1.26. Change both together.
STATICCHECK_VERSION=2026.2.2
STATICCHECK_MODULE_VERSION=v0.8.2

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$(pwd)

# scripts/pg-start.sh defines pg_find_bindir, pg_start and pg_stop.
# shellcheck source=scripts/pg-start.sh
source "$REPO_ROOT/scripts/pg-start.sh"
# scripts/citus-start.sh defines citus_start and citus_stop.
# shellcheck source=scripts/citus-start.sh
source "$REPO_ROOT/scripts/citus-start.sh"

# --- helpers ---------------------------------------------------------------

log() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
warn() { printf 'test.sh: warning: %s\n' "$*" >&2; }
die() {
	printf 'test.sh: error: %s\n' "$*" >&2
	exit 1
}

# in_ci: is this a CI run? The same rule as testenv.InCI: CI is "true" in
# any letter case, or "1".
in_ci() {
	local v=${CI:-}
	v=${v,,}
	[[ $v == true || $v == 1 ]]
}

# Step results for the closing summary: "name|result" lines, and the names of
# the steps that failed.
STEPS=()
FAILED=()
step_ok() { STEPS+=("$1|ok${2:+ ($2)}"); }
step_info() { STEPS+=("$1|$2"); }
step_warn() { STEPS+=("$1|$2"); }
step_fail() {
	STEPS+=("$1|FAILED${2:+: $2}")
	FAILED+=("$1")
}

# Scratch space for this run, and everything to undo on the way out: the
# throwaway PostgreSQL server and this directory. Runs on any exit, including
# a failure or an interrupt.
WORK=$(mktemp -d /tmp/agentmem-test.XXXXXX)
TESTRUN_PID=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [[ -n $TESTRUN_PID ]]; then
		# Interrupted during go test: stop it before its database goes.
		kill -TERM "$TESTRUN_PID" 2>/dev/null || true
		wait "$TESTRUN_PID" 2>/dev/null || true
	fi
	citus_stop
	pg_stop
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# apt_install PACKAGE...: install Debian packages (CI only), quietly; on
# failure show the end of apt's output. Runs `apt-get update` once.
APT_UPDATED=0
apt_install() {
	local sudo=()
	if ((EUID != 0)); then
		if command -v sudo >/dev/null 2>&1; then
			sudo=(sudo -n)
		else
			warn "cannot install $* (not root, no sudo)"
			return 1
		fi
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		warn "cannot install $* (no apt-get)"
		return 1
	fi
	note "installing $* with apt-get (output in the log only on failure)"
	if ((APT_UPDATED == 0)); then
		if ! "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q >>"$WORK/apt.log" 2>&1; then
			tail -n 30 "$WORK/apt.log" >&2
			return 1
		fi
		APT_UPDATED=1
	fi
	# Lock::Timeout: wait for another apt or dpkg run to finish, not fail.
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get -o DPkg::Lock::Timeout=300 install -y -q "$@" \
		>>"$WORK/apt.log" 2>&1; then
		tail -n 30 "$WORK/apt.log" >&2
		return 1
	fi
}

# vendor_file GLOB: print the newest file of the vendor directory
# ($AGENTMEM_VENDOR, else ../shared/vendor beside the repository, where
# CI's fresh clone finds it) that matches GLOB; fail if there is none.
vendor_file() {
	local dir=${AGENTMEM_VENDOR:-$REPO_ROOT/../shared/vendor} f
	[[ -d $dir ]] || return 1
	f=$(find "$dir" -maxdepth 1 -name "$1" | sort -V | tail -n 1)
	[[ -n $f ]] && printf '%s\n' "$f"
}

# install_pgvector: build and install pgvector (scripts/pgvector-install.sh)
# before the throwaway server starts, from $PGVECTOR_SRC or else the vendor
# directory's tarball; the script does nothing when the server has it.
# Without a source it only says so. A failure is an error in CI, a warning
# elsewhere; on success the pgvector tests must run (AGENTMEM_TEST_PGVECTOR=1).
install_pgvector() {
	if [[ -z ${PGVECTOR_SRC:-} ]]; then
		PGVECTOR_SRC=$(vendor_file 'pgvector-*.tar.gz') || PGVECTOR_SRC=
	fi
	if [[ -z ${PGVECTOR_SRC:-} ]] && ! in_ci; then
		return 0
	fi
	local rc=0
	# The source goes as the script's argument: PGVECTOR_SRC found in the
	# vendor directory is this shell's variable, not the script's.
	"$REPO_ROOT/scripts/pgvector-install.sh" ${PGVECTOR_SRC:+"$PGVECTOR_SRC"} 2>&1 | sed 's/^/    /' || rc=${PIPESTATUS[0]}
	case $rc in
	0)
		if [[ -n ${PGVECTOR_SRC:-} ]]; then
			export AGENTMEM_TEST_PGVECTOR=1
		fi
		;;
	3)
		# No source and the server lacks pgvector: in CI the real
		# extension's tests must run, so that fails the run.
		if in_ci; then
			die "pgvector is not installed and there is no source (pgvector-*.tar.gz in ../shared/vendor, or PGVECTOR_SRC)"
		fi
		;;
	*)
		if in_ci; then
			die "could not install pgvector from PGVECTOR_SRC=$PGVECTOR_SRC"
		fi
		warn "could not install pgvector from PGVECTOR_SRC=$PGVECTOR_SRC; its tests will skip"
		;;
	esac
}

# --- arguments -------------------------------------------------------------

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 0
fi

if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		PATH=/usr/local/go/bin:$PATH
	else
		die "no go command on PATH (install Go from https://go.dev/dl/)"
	fi
fi

MODULE=$(awk '$1 == "module" { print $2; exit }' go.mod)

# The adapter modules: adapters/NAME with a go.mod of its own, and
# proxy/sdktest (the official OpenAI and Anthropic Go SDKs against the
# proxy, kept out of the core module's dependencies).
ADAPTERS=()
for mod in adapters/*/go.mod proxy/sdktest/go.mod; do
	if [[ -f $mod ]]; then
		ADAPTERS+=("${mod%/go.mod}")
	fi
done

# adapter_of ARG: the adapter module directory a package argument is in,
# if any.
adapter_of() {
	local p=${1#./} a
	for a in "${ADAPTERS[@]}"; do
		if [[ $p == "$a" || $p == "$a"/* || $1 == "$MODULE/$a" || $1 == "$MODULE/$a"/* ]]; then
			printf '%s\n' "$a"
			return
		fi
	done
}

# FLAGS are the arguments that are not packages; PKGS the root module's
# packages; ADAPTER_PKGS[dir] the packages of an adapter module, relative
# to its directory, space-separated.
FLAGS=()
PKGS=()
VERBOSE=()
declare -A ADAPTER_PKGS=()
any_pkg=0
for arg in "$@"; do
	case $arg in
	./* | ../* | . | .. | "$MODULE" | "$MODULE"/*)
		any_pkg=1
		a=$(adapter_of "$arg")
		if [[ -z $a ]]; then
			PKGS+=("$arg")
			# A pattern DIR/... covers the adapter modules under DIR too.
			if [[ $arg == */... ]]; then
				prefix=${arg%...}
				prefix=${prefix#./}
				prefix=${prefix#"$MODULE"/}
				for a in "${ADAPTERS[@]}"; do
					if [[ $a/ == "$prefix"* ]]; then
						ADAPTER_PKGS[$a]+=" ./..."
					fi
				done
			fi
		elif [[ $arg == "$MODULE"/* ]]; then
			ADAPTER_PKGS[$a]+=" $arg"
		else
			rel=${arg#./}
			rel=${rel#"$a"}
			ADAPTER_PKGS[$a]+=" .$rel"
		fi
		;;
	*)
		FLAGS+=("$arg")
		case $arg in
		-v | -v=true | -test.v | -test.v=true) VERBOSE=(-v) ;;
		esac
		;;
	esac
done
if ((any_pkg == 0)); then
	PKGS=(./...)
	for a in "${ADAPTERS[@]}"; do
		ADAPTER_PKGS[$a]=./...
	done
fi
TEST_ARGS=("${FLAGS[@]}" "${PKGS[@]}")

# adapter_pkgs DIR: the packages asked for in an adapter module, one per
# line (none: the module is left out).
adapter_pkgs() {
	local p
	for p in ${ADAPTER_PKGS[$1]:-}; do
		printf '%s\n' "$p"
	done
}

# SELECTED_ADAPTERS: the adapter modules with packages asked for.
SELECTED_ADAPTERS=()
for a in "${ADAPTERS[@]}"; do
	if [[ -n ${ADAPTER_PKGS[$a]:-} ]]; then
		SELECTED_ADAPTERS+=("$a")
	fi
done

START=$SECONDS
mode=
if in_ci; then mode=", CI mode"; fi
printf 'test.sh: %s, packages %s%s\n' "$(go version)" "${PKGS[*]:-(none of the root module)}${SELECTED_ADAPTERS[*]:+, adapter modules ${SELECTED_ADAPTERS[*]}}" "$mode"

# --- 1. gofmt --------------------------------------------------------------

log "gofmt"
# Tracked and untracked-but-not-ignored files, from git; all files when this
# is not a git work tree. testdata and vendor hold files that need not be
# formatted (or even valid).
list_go_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard -- '*.go'
	else
		find . -name '*.go' -not -path './.git/*' -print0
	fi
}
GO_FILES=()
while IFS= read -r -d '' f; do
	f=${f#./}
	case /$f in
	*/testdata/* | */vendor/*) continue ;;
	esac
	[[ -f $f ]] && GO_FILES+=("$f") # a tracked file may be deleted
done < <(list_go_files)
if ((${#GO_FILES[@]} == 0)); then
	step_ok gofmt "no Go files"
else
	unformatted=$(printf '%s\0' "${GO_FILES[@]}" | xargs -0 gofmt -l 2>&1) || true
	if [[ -n $unformatted ]]; then
		printf '%s\n' "$unformatted" | sed 's/^/    /'
		note "run: gofmt -w <files>"
		n=$(printf '%s\n' "$unformatted" | wc -l)
		step_fail gofmt "$n file$( ((n == 1)) || echo s) not formatted"
	else
		step_ok gofmt "${#GO_FILES[@]} files"
	fi
fi

# --- 1b. machine paths -----------------------------------------------------

# Scripts, docs and comments must work on any machine: no absolute path of
# one machine's checkout or home (examples use /home/you/...). testdata holds
# recorded material and is exempt.
log "machine paths"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	if paths=$(git grep -nIP '(^|[\s"'"'"'`(=:,])(/(work|root|Users)/|/home/(?!you/)[a-z])' -- . ':!*/testdata/*' ':!testdata/*'); then
		printf '%s\n' "$paths" | sed 's/^/    /'
		note "name paths relative to the repository (../shared, scripts/...) or as examples (/home/you/...)"
		step_fail "machine paths" "$(printf '%s\n' "$paths" | wc -l) found"
	else
		step_ok "machine paths" "none"
	fi
else
	step_info "machine paths" "skipped: not a git work tree"
fi

# --- 2. go vet -------------------------------------------------------------

if ((${#PKGS[@]} > 0)); then
	log "go vet ${PKGS[*]}"
	if go vet "${PKGS[@]}"; then
		step_ok "go vet"
	else
		step_fail "go vet"
	fi
fi
for a in "${SELECTED_ADAPTERS[@]}"; do
	mapfile -t apkgs < <(adapter_pkgs "$a")
	log "go vet ${apkgs[*]}   (in $a)"
	if (cd "$a" && go vet "${apkgs[@]}"); then
		step_ok "go vet $a"
	else
		step_fail "go vet $a"
	fi
done

# --- 3. staticcheck --------------------------------------------------------

log "staticcheck ${PKGS[*]:-(the adapter modules only)}"
GOBIN_DIR="$(go env GOPATH | cut -d: -f1)/bin"
STATICCHECK=$GOBIN_DIR/staticcheck
# staticcheck -version prints e.g. "staticcheck 2026.2.2 (0.8.2)".
if ! "$STATICCHECK" -version 2>/dev/null | grep -qF "(${STATICCHECK_MODULE_VERSION#v})"; then
	note "installing staticcheck $STATICCHECK_VERSION into $GOBIN_DIR"
	if ! env GOBIN="$GOBIN_DIR" GOFLAGS= go install \
		"honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_MODULE_VERSION" 2>&1 | sed 's/^/    /'; then
		STATICCHECK=
	fi
fi
if [[ -z $STATICCHECK || ! -x $STATICCHECK ]]; then
	if in_ci; then
		step_fail staticcheck "could not install $STATICCHECK_VERSION"
	else
		warn "could not install staticcheck $STATICCHECK_VERSION; skipping it"
		step_warn staticcheck "SKIPPED: could not install $STATICCHECK_VERSION"
	fi
else
	if ((${#PKGS[@]} > 0)); then
		if "$STATICCHECK" "${PKGS[@]}"; then
			step_ok staticcheck "$STATICCHECK_VERSION"
		else
			step_fail staticcheck
		fi
	fi
	for a in "${SELECTED_ADAPTERS[@]}"; do
		mapfile -t apkgs < <(adapter_pkgs "$a")
		log "staticcheck ${apkgs[*]}   (in $a)"
		if (cd "$a" && "$STATICCHECK" "${apkgs[@]}"); then
			step_ok "staticcheck $a"
		else
			step_fail "staticcheck $a"
		fi
	done
fi

# --- 4. PostgreSQL ---------------------------------------------------------

log "PostgreSQL"
if [[ -n ${AGENTMEM_TEST_POSTGRES_URL:-} ]]; then
	note "using AGENTMEM_TEST_POSTGRES_URL from the environment"
	step_info postgres "given by AGENTMEM_TEST_POSTGRES_URL"
else
	pg_bindir=$(pg_find_bindir) || pg_bindir=
	if [[ -z $pg_bindir ]] && in_ci; then
		note "no PostgreSQL server programs; CI: installing Debian's postgresql"
		apt_install postgresql || die "could not install postgresql"
		pg_bindir=$(pg_find_bindir) || die "postgresql installed, but no initdb/pg_ctl/postgres found"
	fi
	if [[ -n $pg_bindir ]]; then
		install_pgvector
	fi
	if [[ -z $pg_bindir ]]; then
		note "PostgreSQL server programs not found: tests that need PostgreSQL will skip"
		note "(install them: apt-get install postgresql; or set AGENTMEM_TEST_POSTGRES_URL)"
		step_warn postgres "not found: PostgreSQL tests skip"
	elif pg_start "$pg_bindir"; then
		note "AGENTMEM_TEST_POSTGRES_URL=$AGENTMEM_TEST_POSTGRES_URL"
		step_info postgres "throwaway PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT"
	elif in_ci; then
		die "could not start a throwaway PostgreSQL server (see above)"
	else
		warn "could not start a throwaway PostgreSQL server; tests that need it will skip"
		step_warn postgres "failed to start: PostgreSQL tests skip"
	fi
fi

log "Citus"
citus_bindir=${pg_bindir:-$(pg_find_bindir || true)}
if [[ -n ${AGENTMEM_TEST_CITUS_URL:-} ]]; then
	note "using AGENTMEM_TEST_CITUS_URL from the environment"
	step_info citus "given by AGENTMEM_TEST_CITUS_URL"
elif [[ -z $citus_bindir ]]; then
	if in_ci; then
		die "Citus: no PostgreSQL server programs"
	fi
	note "no PostgreSQL server programs: the Citus tests skip"
	step_warn citus "no PostgreSQL: Citus tests skip"
else
	# citus_fail REASON: fail the run in CI, else warn that the tests skip.
	citus_fail() {
		if in_ci; then
			die "Citus: $1"
		fi
		warn "Citus: $1; the Citus tests skip"
		step_warn citus "$1: Citus tests skip"
	}
	citus_src=${CITUS_SRC:-$(vendor_file 'citus-*.tar.gz' || true)}
	rc=0
	"$REPO_ROOT/scripts/citus-install.sh" "$citus_src" 2>&1 | sed 's/^/    /' || rc=${PIPESTATUS[0]}
	case $rc in
	0)
		if citus_start "$citus_bindir"; then
			note "AGENTMEM_TEST_CITUS_URL=$AGENTMEM_TEST_CITUS_URL"
			step_info citus "throwaway cluster: coordinator and 2 workers on ${CITUS_PORTS[*]:0:3}, spare ${CITUS_PORTS[3]}"
		else
			citus_fail "could not start a throwaway cluster (see above)"
		fi
		;;
	3) citus_fail "no Citus source (citus-*.tar.gz in ../shared/vendor, or CITUS_SRC)" ;;
	*) citus_fail "could not build or install Citus (see above)" ;;
	esac
fi

log "pgvector"
if [[ -z ${AGENTMEM_TEST_POSTGRES_URL:-} ]]; then
	step_info pgvector "no PostgreSQL: pgvector tests skip"
else
	psql=psql
	if [[ -n ${pg_bindir:-} && -x $pg_bindir/psql ]]; then
		psql=$pg_bindir/psql
	fi
	pgv=$("$psql" -X -A -t -d "$AGENTMEM_TEST_POSTGRES_URL" \
		-c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'" 2>/dev/null || echo '?')
	case $pgv in
	1)
		# The server has it: its tests must run, not skip.
		export AGENTMEM_TEST_PGVECTOR=1
		step_info pgvector "available: recall/postgres tests the real extension too"
		;;
	0)
		if in_ci; then
			die "the throwaway PostgreSQL server has no pgvector: CI must test the real extension"
		fi
		note "the server has no pgvector: TestPGVectorReal skips (the stand-in tests run);"
		note "to test the real extension: PGVECTOR_SRC=<pgvector source tree or .tar.gz> ./scripts/test.sh"
		step_warn pgvector "not installed: the real-pgvector tests skip"
		;;
	*) step_warn pgvector "could not ask the server (no psql?)" ;;
	esac
fi

# --- 5. Chromium -----------------------------------------------------------

log "Chromium"
if [[ -n ${AGENTMEM_TEST_CHROMIUM:-} ]]; then
	note "using AGENTMEM_TEST_CHROMIUM=$AGENTMEM_TEST_CHROMIUM from the environment"
	step_info chromium "given: $AGENTMEM_TEST_CHROMIUM"
else
	if [[ ! -x /usr/bin/chromium ]] && in_ci; then
		note "no /usr/bin/chromium; CI: installing Debian's chromium"
		apt_install chromium || die "could not install chromium"
	fi
	chromium=
	if [[ -x /usr/bin/chromium ]]; then
		chromium=/usr/bin/chromium
	elif ! in_ci; then
		for c in chromium chromium-browser; do
			c=$(command -v "$c" || true)
			# command -v may name a file that is not executable.
			if [[ -n $c && -x $c ]]; then
				chromium=$c
				break
			fi
		done
	fi
	if [[ -n $chromium ]]; then
		export AGENTMEM_TEST_CHROMIUM=$chromium
		note "AGENTMEM_TEST_CHROMIUM=$chromium"
		step_info chromium "$chromium"
	elif in_ci; then
		die "chromium installed, but no /usr/bin/chromium"
	else
		note "Chromium not found: browser tests will skip (install it: apt-get install chromium)"
		step_warn chromium "not found: browser tests skip"
	fi
fi

# --- 5b. release tools ------------------------------------------------------

# The release script's test packs Windows archives with zip.
if ! command -v zip >/dev/null; then
	if in_ci; then
		apt_install zip || die "could not install zip"
	else
		note "zip not found: the release script's test skips (install it: apt-get install zip)"
	fi
fi

# --- 6. go test ------------------------------------------------------------

# The race detector needs cgo, so a C compiler.
RACE=(-race)
if [[ ${AGENTMEM_TEST_RACE:-1} == 0 ]]; then
	RACE=()
	step_info "race detector" "off (AGENTMEM_TEST_RACE=0)"
elif [[ $(go env CGO_ENABLED) != 1 ]]; then
	if in_ci; then
		log "race detector: cgo is off; CI: installing gcc"
		apt_install gcc libc6-dev || die "could not install gcc for the race detector"
		export CGO_ENABLED=1
		step_info "race detector" "on"
	else
		warn "the race detector needs cgo and a C compiler (apt-get install gcc); running without -race"
		RACE=()
		step_warn "race detector" "OFF: cgo unavailable (install gcc)"
	fi
else
	step_info "race detector" "on"
fi

# A package's test binary, not the whole step, has a time limit: a slower
# machine makes every package slower, and a fixed limit on their sum failed
# healthy runs. A binary that runs past it prints its goroutines and is named.
TIMEOUT=${AGENTMEM_TEST_TIMEOUT:-15m}
GO_TEST_FLAGS=("${RACE[@]}" -count=1 "-timeout=$TIMEOUT")
DEADLINE=${AGENTMEM_TEST_DEADLINE:-0}
TESTRUN=$WORK/testrun
if ! go build -o "$TESTRUN" ./internal/testenv/cmd/testrun; then
	# The reporter does not build (go.mod broken?): go test runs plainly so
	# the failure shows; no counts then.
	warn "could not build internal/testenv/cmd/testrun; running go test without it"
	TESTRUN=
fi

# run_tests STEP DIR ARG...: go test ARG... in the module at DIR, as the
# step STEP, through the reporter; its counts are added to passed, failed
# and skipped.
passed='' failed='' skipped=''
run_tests() {
	local step=$1 dir=$2 rc=0 detail start=$SECONDS
	shift 2
	local limit="each test binary limited to $TIMEOUT"
	[[ $DEADLINE != 0 ]] && limit="$limit, the step to $DEADLINE"
	log "go test ${GO_TEST_FLAGS[*]} $*   (in $dir; $limit)"
	if [[ -z $TESTRUN ]]; then
		(cd "$dir" && go test "${GO_TEST_FLAGS[@]}" "$@") || rc=$?
		detail="no counts"
	else
		rm -f "$WORK/summary"
		# In the background, so that a signal to this script runs its trap
		# at once (bash runs traps only between commands, and `wait` is
		# one); cleanup then stops testrun, which stops go test.
		(cd "$dir" && exec "$TESTRUN" "${VERBOSE[@]}" -deadline "$DEADLINE" -summary "$WORK/summary" -- \
			"${GO_TEST_FLAGS[@]}" "$@") </dev/null &
		TESTRUN_PID=$!
		wait "$TESTRUN_PID" || rc=$?
		TESTRUN_PID=
		local -A sum=()
		local key value
		if [[ -f $WORK/summary ]]; then
			while IFS='=' read -r key value; do
				sum[$key]=$value
			done <"$WORK/summary"
		fi
		passed=$((${passed:-0} + ${sum[passed]:-0}))
		failed=$((${failed:-0} + ${sum[failed]:-0}))
		skipped=$((${skipped:-0} + ${sum[skipped]:-0}))
		detail="packages: ${sum[packages_ok]:-0} ok, ${sum[packages_failed]:-0} failed, ${sum[packages_no_test]:-0} without tests"
		if [[ ${sum[deadline_exceeded]:-0} == 1 ]]; then
			detail="stopped at the $DEADLINE deadline (AGENTMEM_TEST_DEADLINE gives more); $detail"
		fi
		if ((${sum[packages_timed_out]:-0} > 0)); then
			detail="${sum[packages_timed_out]} timed out after $TIMEOUT (AGENTMEM_TEST_TIMEOUT gives more); $detail"
		fi
	fi
	detail="$detail, $((SECONDS - start))s"
	if ((rc == 0)); then
		step_ok "$step" "$detail"
	else
		step_fail "$step" "$detail"
	fi
}

if ((${#PKGS[@]} > 0)); then
	run_tests "go test" . "${TEST_ARGS[@]}"
fi
for a in "${SELECTED_ADAPTERS[@]}"; do
	mapfile -t apkgs < <(adapter_pkgs "$a")
	run_tests "go test $a" "$a" "${FLAGS[@]}" "${apkgs[@]}"
done

# --- 7. Python client --------------------------------------------------------

# python3 -m unittest over clients/python/tests, against the agentmem binary
# built here (AGENTMEM_BIN). Python 3.9+, standard library only.
log "Python client (clients/python)"
if ((any_pkg == 1)) && [[ ${AGENTMEM_TEST_PYTHON:-} != 1 ]]; then
	note "not run: packages were named (AGENTMEM_TEST_PYTHON=1 runs it too)"
	step_info python "not run: packages named"
else
	python=$(command -v python3 || true)
	if [[ -z $python ]] && in_ci; then
		note "no python3; CI: installing Debian's python3"
		apt_install python3 || die "could not install python3"
		python=$(command -v python3 || true)
	fi
	if [[ -z $python ]]; then
		in_ci && die "python3 installed, but not on PATH"
		note "python3 not found: the Python client's tests skip (install it: apt-get install python3)"
		step_warn python "not found: Python client tests skip"
	elif ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
		if in_ci; then
			step_fail python "$("$python" --version 2>&1) is older than 3.9"
		else
			note "$("$python" --version 2>&1) is older than 3.9: the Python client's tests skip"
			step_warn python "python3 older than 3.9: tests skip"
		fi
	elif ! go build -o "$WORK/agentmem" ./cmd/agentmem; then
		step_fail python "could not build ./cmd/agentmem"
	elif AGENTMEM_BIN="$WORK/agentmem" PYTHONDONTWRITEBYTECODE=1 "$python" -m unittest discover \
		-s clients/python/tests -t clients/python "${VERBOSE[@]}"; then
		step_ok python "$("$python" --version 2>&1)"
	else
		step_fail python
	fi
fi

# --- 8. TypeScript client ----------------------------------------------------

# clients/typescript: npm ci (the lockfile pins every package; npm's own
# cache, outside the repository), the build (types generated from
# server/openapi.json, then tsc), then its node --test suites against an
# agentmem binary built here (the Python step's, or built now). Only in a
# run of the whole repository (no package named), or with
# AGENTMEM_TEST_TS=1. Without Node 20+ and npm
# they skip, with the reason; in CI the script installs Debian's nodejs and
# npm when they are missing, and anything missing or failing fails the run.
ts_counts=
log "TypeScript client (clients/typescript)"
ts_wanted=0
if [[ ${AGENTMEM_TEST_TS:-} == 1 ]] || { [[ ${AGENTMEM_TEST_TS:-} != 0 ]] && ((any_pkg == 0)); }; then
	ts_wanted=1
fi
# node_major prints the major version of node, or nothing.
node_major() { node --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p'; }
if ((ts_wanted == 0)); then
	note "not run: packages were named (AGENTMEM_TEST_TS=1 runs it too)"
	step_info typescript "not run: packages named"
else
	if { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; } && in_ci; then
		note "no node or npm; CI: installing Debian's nodejs and npm"
		apt_install nodejs npm || true
	fi
	ts_missing=
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		ts_missing="node and npm not found (install Node.js 20 or later)"
	elif (($(node_major) < 20)); then
		ts_missing="node $(node --version) is older than 20"
	fi
	if [[ -n $ts_missing ]]; then
		if in_ci; then
			step_fail typescript "$ts_missing"
		else
			note "$ts_missing: the TypeScript client's tests skip"
			step_warn typescript "SKIPPED: $ts_missing"
		fi
	else
		ts_dir=$REPO_ROOT/clients/typescript
		ts_rc=0
		note "node $(node --version), npm $(npm --version 2>/dev/null)"
		if ! (cd "$ts_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$WORK/npm-ci.log" 2>&1; then
			tail -n 30 "$WORK/npm-ci.log" | sed 's/^/    /'
			step_fail typescript "npm ci failed"
		elif ! (cd "$ts_dir" && npm run --silent build) 2>&1 | sed 's/^/    /'; then
			step_fail typescript "the build failed"
		elif [[ ! -x $WORK/agentmem ]] && ! go build -o "$WORK/agentmem" ./cmd/agentmem; then
			step_fail typescript "could not build the agentmem binary"
		else
			ts_start=$SECONDS
			(cd "$ts_dir" && AGENTMEM_BIN=$WORK/agentmem node --test --test-concurrency=1 --test-reporter=spec test/*.test.js) \
				>"$WORK/ts-test.log" 2>&1 </dev/null || ts_rc=$?
			if [[ ${#VERBOSE[@]} -gt 0 || $ts_rc -ne 0 ]]; then
				sed 's/^/    /' "$WORK/ts-test.log"
			fi
			# The spec reporter ends with "ℹ pass N", "ℹ fail N", "ℹ skipped N".
			ts_count() { sed -n "s/^ℹ $1 \([0-9]*\)$/\1/p" "$WORK/ts-test.log" | tail -n 1; }
			ts_pass=$(ts_count pass) ts_fail=$(ts_count fail) ts_skip=$(ts_count skipped)
			ts_counts="${ts_pass:-0} ${ts_fail:-0} ${ts_skip:-0}"
			detail="${ts_pass:-0} passed, ${ts_fail:-0} failed, ${ts_skip:-0} skipped, $((SECONDS - ts_start))s"
			if ((ts_rc == 0)); then
				step_ok typescript "$detail"
			else
				step_fail typescript "$detail"
			fi
		fi
	fi
fi

# --- summary ---------------------------------------------------------------

log "summary"
width=14
for s in "${STEPS[@]}"; do
	n=${s%%|*}
	if ((${#n} > width)); then
		width=${#n}
	fi
done
for s in "${STEPS[@]}"; do
	printf '    %-*s %s\n' "$width" "${s%%|*}" "${s#*|}"
done
if ((${#FAILED[@]} == 0)); then
	printf 'test.sh: PASS in %ds\n' "$((SECONDS - START))"
else
	failed_steps=$(printf '%s, ' "${FAILED[@]}")
	printf 'test.sh: FAIL (%s) in %ds\n' "${failed_steps%, }" "$((SECONDS - START))"
fi
if [[ -n $ts_counts ]]; then
	read -r ts_pass ts_fail ts_skip <<<"$ts_counts"
	passed=$((${passed:-0} + ts_pass)) failed=$((${failed:-0} + ts_fail)) skipped=$((${skipped:-0} + ts_skip))
fi
if [[ -n $passed ]]; then
	# The closing line, in the plain form CI tools read (go test's counts
	# and the TypeScript suites').
	printf 'tests: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
fi
((${#FAILED[@]} == 0))
exit
}
