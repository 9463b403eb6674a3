#!/usr/bin/env bash
# citus-start.sh: a throwaway Citus cluster for agentmem's tests: a
# coordinator and two workers on loopback ports, and a spare node that is
# not in the cluster (the rebalance test adds it).
#
# Run it:
#
#   scripts/citus-start.sh               start a cluster, print its URL, keep it
#                                        until Ctrl-C; then stop it and remove it
#   scripts/citus-start.sh CMD [ARG...]  start a cluster, run CMD with
#                                        AGENTMEM_TEST_CITUS_URL set, stop it
#
#   e.g. scripts/citus-start.sh go test -run Citus ./store/...
#
# Or source it, as scripts/test.sh does, for these functions:
#
#   citus_start BINDIR   start the cluster with the PostgreSQL programs in BINDIR
#                        (Citus must be installed there: scripts/citus-install.sh),
#                        export AGENTMEM_TEST_CITUS_URL (the coordinator) and
#                        AGENTMEM_TEST_CITUS_SPARE (host:port of the spare node),
#                        set CITUS_PORTS (coordinator, workers, spare) and
#                        CITUS_TMPDIR
#   citus_stop           stop every node and remove their files; safe to call twice
#
# Each node is a new cluster in one temporary directory (/tmp/agentmem-citus.*),
# set up as scripts/pg-start.sh sets up its server (127.0.0.1 only, a free
# port, its unix socket in that directory, trust authentication, the C locale,
# database agentmem_test, run as the postgres user when started as root), with
# shared_preload_libraries = 'citus', wal_level = logical (shard moves copy
# by logical replication) and citus.shard_count = 4: every test creates its
# tables in a schema of its own, and 4 shards per table (not Citus's default
# 32) keep that fast while still spreading every table over both workers.
# fsync is off (the cluster is thrown away) but synchronous_commit is not:
# with it off, a shard move can lose a write acknowledged just before its
# switch-over (Citus waits for the new placement to reach the source's
# pg_current_wal_lsn(), the WAL *write* position, which an asynchronous
# commit may not have reached yet), and TestCitusRebalance refuses such a
# cluster (see docs/operations.md, Adding a worker).
#
# If this script is killed with SIGKILL nothing can clean up: stop the
# leftover nodes with `pg_ctl -D /tmp/agentmem-citus.XXXXXX/NODE stop` (as
# their user) and remove the directory.

# shellcheck source=scripts/pg-start.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/pg-start.sh"

CITUS_TMPDIR=
CITUS_BINDIR=
CITUS_PORTS=()
CITUS_NODES=(coordinator worker1 worker2 spare)

_citus_log() { printf 'citus-start: %s\n' "$*" >&2; }

_citus_show_logs() {
	local f
	for f in "$CITUS_TMPDIR"/*.log; do
		if [[ -s $f ]]; then
			printf -- '--- %s (last 15 lines)\n' "$(basename "$f")" >&2
			tail -n 15 "$f" >&2
		fi
	done
}

# _citus_psql PORT SQL: run SQL on a node's agentmem_test database.
_citus_psql() {
	"$CITUS_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -A -t -h 127.0.0.1 -p "$1" -U "$PG_USER" \
		-d "$PG_DATABASE" -c "$2"
}

# _citus_node NAME: initialize and start one node; appends its port to
# CITUS_PORTS.
_citus_node() {
	local name=$1 dir=$CITUS_TMPDIR/$1 port attempt started=0
	if ! _pg_as_user "$CITUS_BINDIR/initdb" --pgdata="$dir" --username="$PG_USER" \
		--auth=trust --encoding=UTF8 --locale=C --no-sync >"$CITUS_TMPDIR/$name-initdb.log" 2>&1; then
		_citus_log "initdb of $name failed"
		return 1
	fi
	cat >>"$dir/postgresql.conf" <<-EOF

		# Added by scripts/citus-start.sh: a throwaway Citus node for tests.
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$CITUS_TMPDIR'
		shared_preload_libraries = 'citus'
		wal_level = logical
		max_prepared_transactions = 200
		max_connections = 300
		shared_buffers = 32MB
		fsync = off
		full_page_writes = off
		citus.shard_count = 4
	EOF
	for attempt in 1 2 3 4 5; do
		port=$(_pg_free_port) || { _citus_log "no free port found"; return 1; }
		if _pg_as_user "$CITUS_BINDIR/pg_ctl" --pgdata="$dir" --log="$CITUS_TMPDIR/$name.log" \
			--options="-p $port" --wait --timeout=60 start >"$CITUS_TMPDIR/$name-pg_ctl.log" 2>&1; then
			started=1
			break
		fi
		if ! grep -qE 'could not bind|already in use' "$CITUS_TMPDIR/$name.log" 2>/dev/null; then
			break
		fi
		_citus_log "port $port was taken (attempt $attempt), trying another"
	done
	if ((!started)); then
		_citus_log "$name did not start"
		return 1
	fi
	CITUS_PORTS+=("$port")
	if ! "$CITUS_BINDIR/createdb" --host=127.0.0.1 --port="$port" --username="$PG_USER" \
		"$PG_DATABASE" >"$CITUS_TMPDIR/$name-createdb.log" 2>&1; then
		_citus_log "createdb on $name failed"
		return 1
	fi
	if ! _citus_psql "$port" "CREATE EXTENSION citus" >"$CITUS_TMPDIR/$name-extension.log" 2>&1; then
		_citus_log "CREATE EXTENSION citus on $name failed (is Citus installed? scripts/citus-install.sh)"
		return 1
	fi
}

# citus_start BINDIR: start the cluster. On failure it prints the logs,
# cleans up and returns non-zero.
citus_start() {
	CITUS_BINDIR=$1
	CITUS_PORTS=()
	if ! _pg_is_bindir "$CITUS_BINDIR"; then
		_citus_log "no PostgreSQL server programs in '$CITUS_BINDIR'"
		return 1
	fi
	if [[ ! -f $("$CITUS_BINDIR/pg_config" --pkglibdir 2>/dev/null)/citus.so ]]; then
		_citus_log "Citus is not installed for the PostgreSQL in $CITUS_BINDIR (scripts/citus-install.sh)"
		return 1
	fi
	_pg_pick_user || { _citus_log "cannot find or create a user to run PostgreSQL"; return 1; }
	CITUS_TMPDIR=$(mktemp -d /tmp/agentmem-citus.XXXXXX) || return 1
	if ((EUID == 0)); then
		chown "$PG_USER:" "$CITUS_TMPDIR" || { citus_stop; return 1; }
	fi
	local name
	for name in "${CITUS_NODES[@]}"; do
		if ! _citus_node "$name"; then
			_citus_show_logs
			citus_stop
			return 1
		fi
	done
	local coord=${CITUS_PORTS[0]}
	if ! _citus_psql "$coord" "SELECT citus_set_coordinator_host('127.0.0.1', $coord);
		SELECT citus_add_node('127.0.0.1', ${CITUS_PORTS[1]});
		SELECT citus_add_node('127.0.0.1', ${CITUS_PORTS[2]});" >"$CITUS_TMPDIR/cluster.log" 2>&1; then
		_citus_log "could not form the cluster"
		_citus_show_logs
		citus_stop
		return 1
	fi
	export AGENTMEM_TEST_CITUS_URL="postgres://$PG_USER@127.0.0.1:$coord/$PG_DATABASE?sslmode=disable"
	export AGENTMEM_TEST_CITUS_SPARE="127.0.0.1:${CITUS_PORTS[3]}"
	_citus_log "Citus $(_citus_psql "$coord" "SELECT extversion FROM pg_extension WHERE extname = 'citus'") started:" \
		"coordinator 127.0.0.1:$coord, workers :${CITUS_PORTS[1]} :${CITUS_PORTS[2]}," \
		"spare :${CITUS_PORTS[3]}, as $PG_USER, data in $CITUS_TMPDIR"
}

# citus_stop: stop every node started by citus_start and remove their
# directory. Does nothing when none runs; safe to call from a trap, twice.
citus_stop() {
	[[ -n ${CITUS_TMPDIR:-} ]] || return 0
	local dir=$CITUS_TMPDIR name pid
	CITUS_TMPDIR=
	for name in "${CITUS_NODES[@]}"; do
		[[ -f $dir/$name/postmaster.pid ]] || continue
		if ! _pg_as_user "$CITUS_BINDIR/pg_ctl" --pgdata="$dir/$name" --mode=fast --wait --timeout=30 \
			stop >/dev/null 2>&1; then
			pid=$(head -n 1 "$dir/$name/postmaster.pid" 2>/dev/null || true)
			if [[ $pid =~ ^[0-9]+$ ]]; then
				_citus_log "pg_ctl stop of $name failed; killing postmaster $pid"
				kill -KILL "$pid" 2>/dev/null || true
				sleep 1
			fi
		fi
	done
	rm -rf "$dir"
	unset AGENTMEM_TEST_CITUS_URL AGENTMEM_TEST_CITUS_SPARE
}

# Run as a program rather than sourced.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail

	_citus_sleep_pid=
	_citus_main_cleanup() {
		if [[ -n $_citus_sleep_pid ]]; then
			kill "$_citus_sleep_pid" 2>/dev/null || true
		fi
		citus_stop
	}
	trap _citus_main_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP

	if ! bindir=$(pg_find_bindir); then
		_citus_log "no PostgreSQL server programs (initdb, pg_ctl, postgres) found"
		exit 1
	fi
	citus_start "$bindir"

	if (($# > 0)); then
		rc=0
		"$@" || rc=$?
		exit "$rc"
	fi
	printf 'export AGENTMEM_TEST_CITUS_URL=%q\n' "$AGENTMEM_TEST_CITUS_URL"
	printf 'export AGENTMEM_TEST_CITUS_SPARE=%q\n' "$AGENTMEM_TEST_CITUS_SPARE"
	_citus_log "running until Ctrl-C (or SIGTERM); then the cluster is stopped and removed"
	sleep infinity &
	_citus_sleep_pid=$!
	wait "$_citus_sleep_pid"
fi
