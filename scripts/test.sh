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
# Steps, in order; a failing step does not stop the later ones, and the
# script exits non-zero if any failed:
#
#   1. gofmt -l on every tracked and untracked (not ignored) Go file
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
#
# Without PostgreSQL, Citus or Chromium the tests that need them skip, with a
# reason. In CI (CI=true) nothing may be missing: the script installs
# staticcheck, Debian's postgresql, the build dependencies of pgvector and
# Citus (postgresql-server-dev-15 liblz4-dev libzstd-dev libkrb5-dev) and
# chromium (apt-get) and gcc for the race detector when they are missing,
# and a failure to do so, or to build pgvector or Citus, fails the run.
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
#   AGENTMEM_TEST_TIMEOUT        go test -timeout for each test binary (8m)
#   AGENTMEM_TEST_DEADLINE       limit for the whole go test step (12m)
#   AGENTMEM_TEST_RACE=0         run without the race detector
#   PGVECTOR_SRC                 a pgvector source tree or .tar.gz to install
#                                into the server (default: the vendor's)
#   AGENTMEM_TEST_PGVECTOR=1     the pgvector tests fail, not skip, without it
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
	"$REPO_ROOT/scripts/pgvector-install.sh" 2>&1 | sed 's/^/    /' || rc=${PIPESTATUS[0]}
	case $rc in
	0)
		if [[ -n ${PGVECTOR_SRC:-} ]]; then
			export AGENTMEM_TEST_PGVECTOR=1
		fi
		;;
	3) ;; # no source: the pgvector step below reports it
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
TEST_ARGS=("$@")
PKGS=()
VERBOSE=()
for arg in "$@"; do
	case $arg in
	./* | ../* | . | .. | "$MODULE" | "$MODULE"/*) PKGS+=("$arg") ;;
	-v | -v=true | -test.v | -test.v=true) VERBOSE=(-v) ;;
	esac
done
if ((${#PKGS[@]} == 0)); then
	PKGS=(./...)
	TEST_ARGS+=(./...)
fi

START=$SECONDS
mode=
if in_ci; then mode=", CI mode"; fi
printf 'test.sh: %s, packages %s%s\n' "$(go version)" "${PKGS[*]}" "$mode"

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

# --- 2. go vet -------------------------------------------------------------

log "go vet ${PKGS[*]}"
if go vet "${PKGS[@]}"; then
	step_ok "go vet"
else
	step_fail "go vet"
fi

# --- 3. staticcheck --------------------------------------------------------

log "staticcheck ${PKGS[*]}"
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
elif "$STATICCHECK" "${PKGS[@]}"; then
	step_ok staticcheck "$STATICCHECK_VERSION"
else
	step_fail staticcheck
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
	1) step_info pgvector "available: recall/postgres tests the real extension too" ;;
	0)
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

GO_TEST_FLAGS=("${RACE[@]}" -count=1 "-timeout=${AGENTMEM_TEST_TIMEOUT:-8m}")
DEADLINE=${AGENTMEM_TEST_DEADLINE:-12m}
log "go test ${GO_TEST_FLAGS[*]} ${TEST_ARGS[*]}   (whole step limited to $DEADLINE)"

test_start=$SECONDS
passed='' failed='' skipped=''
if go build -o "$WORK/testrun" ./internal/testenv/cmd/testrun; then
	# In the background, so that a signal to this script runs its trap at
	# once (bash runs traps only between commands, and `wait` is one);
	# cleanup then stops testrun, which stops go test.
	rc=0
	"$WORK/testrun" "${VERBOSE[@]}" -deadline "$DEADLINE" -summary "$WORK/summary" -- \
		"${GO_TEST_FLAGS[@]}" "${TEST_ARGS[@]}" </dev/null &
	TESTRUN_PID=$!
	wait "$TESTRUN_PID" || rc=$?
	TESTRUN_PID=
	declare -A sum=()
	if [[ -f $WORK/summary ]]; then
		while IFS='=' read -r key value; do
			sum[$key]=$value
		done <"$WORK/summary"
	fi
	passed=${sum[passed]:-0} failed=${sum[failed]:-0} skipped=${sum[skipped]:-0}
	detail="packages: ${sum[packages_ok]:-0} ok, ${sum[packages_failed]:-0} failed, ${sum[packages_no_test]:-0} without tests"
	if [[ ${sum[deadline_exceeded]:-0} == 1 ]]; then
		detail="stopped at the $DEADLINE deadline; $detail"
	fi
else
	# The reporter does not build (go.mod broken?): run go test plainly so the
	# failure shows; no counts then.
	warn "could not build internal/testenv/cmd/testrun; running go test without it"
	rc=0
	go test "${GO_TEST_FLAGS[@]}" "${TEST_ARGS[@]}" || rc=$?
	detail="no counts"
fi
detail="$detail, $((SECONDS - test_start))s"
if ((rc == 0)); then
	step_ok "go test" "$detail"
else
	step_fail "go test" "$detail"
fi

# --- summary ---------------------------------------------------------------

log "summary"
for s in "${STEPS[@]}"; do
	printf '    %-14s %s\n' "${s%%|*}" "${s#*|}"
done
if ((${#FAILED[@]} == 0)); then
	printf 'test.sh: PASS in %ds\n' "$((SECONDS - START))"
else
	failed_steps=$(printf '%s, ' "${FAILED[@]}")
	printf 'test.sh: FAIL (%s) in %ds\n' "${failed_steps%, }" "$((SECONDS - START))"
fi
if [[ -n $passed ]]; then
	# The closing line, in the plain form CI tools read.
	printf 'tests: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
fi
((${#FAILED[@]} == 0))
exit
}
