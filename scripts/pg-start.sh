#!/usr/bin/env bash
# pg-start.sh: a throwaway PostgreSQL server for agentmem's tests.
#
# Run it:
#
#   scripts/pg-start.sh                  start a server, print its URL, and keep it
#                                        until Ctrl-C; then stop it and remove it
#   scripts/pg-start.sh CMD [ARG...]     start a server, run CMD with
#                                        AGENTMEM_TEST_POSTGRES_URL set, stop it
#
#   e.g. scripts/pg-start.sh go test -run Postgres ./store/...
#
# Or source it, as scripts/test.sh does, for these functions:
#
#   pg_find_bindir    print the directory of the PostgreSQL server programs
#                     (initdb, pg_ctl, postgres); fail if there is none
#   pg_start BINDIR   start a server, export AGENTMEM_TEST_POSTGRES_URL, set
#                     PG_PORT, PG_USER, PG_VERSION and PG_TMPDIR
#   pg_stop           stop the server and remove its files; safe to call twice
#
# The server is a new cluster in a temporary directory (/tmp/agentmem-pg.*):
# it listens only on 127.0.0.1 at a free port, keeps its unix socket in that
# directory, trusts every local connection, and has one database,
# agentmem_test. PostgreSQL refuses to run as root, so as root the server runs
# as the `postgres` system user, or as a system user `agentmem-pg` created for
# the purpose when there is no `postgres` user. A system-wide cluster, if the
# machine has one, is never touched.
#
# If this script is killed with SIGKILL nothing can clean up: stop a leftover
# server with `pg_ctl -D /tmp/agentmem-pg.XXXXXX/data stop` (as its user) and
# remove the directory.

# The repository root, for `go run ./internal/testenv/cmd/freeport`.
PG_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

PG_DATABASE=agentmem_test
PG_TMPDIR=
PG_BINDIR=
PG_USER=
PG_PORT=
PG_VERSION=

_pg_log() { printf 'pg-start: %s\n' "$*" >&2; }

# _pg_is_bindir DIR: does DIR hold the server programs?
_pg_is_bindir() {
	[[ -n $1 && -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]
}

# pg_find_bindir: print the directory of the PostgreSQL server programs.
# Looks at `pg_config --bindir`, then Debian's /usr/lib/postgresql/*/bin
# (newest version first), then initdb on PATH.
pg_find_bindir() {
	local dir
	if command -v pg_config >/dev/null 2>&1; then
		dir=$(pg_config --bindir 2>/dev/null || true)
		if _pg_is_bindir "$dir"; then
			printf '%s\n' "$dir"
			return 0
		fi
	fi
	if compgen -G '/usr/lib/postgresql/*/bin' >/dev/null; then
		while IFS= read -r dir; do
			if _pg_is_bindir "$dir"; then
				printf '%s\n' "$dir"
				return 0
			fi
		done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r)
	fi
	if command -v initdb >/dev/null 2>&1; then
		# Follow symlinks such as /usr/local/bin/initdb -> .../15/bin/initdb.
		dir=$(dirname "$(readlink -f "$(command -v initdb)")")
		if _pg_is_bindir "$dir"; then
			printf '%s\n' "$dir"
			return 0
		fi
	fi
	return 1
}

# _pg_as_user CMD...: run CMD as the server's user, from / (which every user
# can enter; initdb and pg_ctl complain about a working directory they can't).
_pg_as_user() {
	if ((EUID != 0)); then
		(cd / && "$@")
	elif command -v runuser >/dev/null 2>&1; then
		(cd / && runuser -u "$PG_USER" -- "$@")
	else
		(cd / && su -s /bin/sh "$PG_USER" -c "$(printf '%q ' "$@")")
	fi
}

# _pg_pick_user: set PG_USER to the user the server runs as.
_pg_pick_user() {
	if ((EUID != 0)); then
		PG_USER=$(id -un)
	elif getent passwd postgres >/dev/null; then
		PG_USER=postgres
	else
		PG_USER=agentmem-pg
		if ! getent passwd "$PG_USER" >/dev/null; then
			_pg_log "creating system user $PG_USER to run PostgreSQL (it refuses to run as root)"
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin "$PG_USER" || return 1
		fi
	fi
}

# _pg_free_port: print a TCP port on 127.0.0.1 that is free now.
_pg_free_port() {
	if command -v go >/dev/null 2>&1 &&
		(cd "$PG_REPO_ROOT" && go run ./internal/testenv/cmd/freeport) 2>/dev/null; then
		return 0
	fi
	# No Go program: probe random ports; a refused connection means free.
	local port i
	for ((i = 0; i < 100; i++)); do
		port=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			printf '%s\n' "$port"
			return 0
		fi
	done
	return 1
}

# _pg_show_logs: print the end of the server's logs, to explain a failure.
_pg_show_logs() {
	local f
	for f in "$PG_TMPDIR"/initdb.log "$PG_TMPDIR"/pg_ctl.log "$PG_TMPDIR"/server.log "$PG_TMPDIR"/createdb.log; do
		if [[ -s $f ]]; then
			printf -- '--- %s (last 20 lines)\n' "$(basename "$f")" >&2
			tail -n 20 "$f" >&2
		fi
	done
}

# pg_start BINDIR: start a throwaway server with the programs in BINDIR and
# export AGENTMEM_TEST_POSTGRES_URL. On failure it prints the logs, cleans up
# and returns non-zero.
pg_start() {
	PG_BINDIR=$1
	if ! _pg_is_bindir "$PG_BINDIR"; then
		_pg_log "no PostgreSQL server programs in '$PG_BINDIR'"
		return 1
	fi
	PG_VERSION=$("$PG_BINDIR/postgres" --version 2>/dev/null | awk '{print $3}')
	_pg_pick_user || { _pg_log "cannot find or create a user to run PostgreSQL"; return 1; }

	# Always under /tmp: every user can reach it, and the socket path stays
	# shorter than the ~100 bytes a unix socket path may have.
	PG_TMPDIR=$(mktemp -d /tmp/agentmem-pg.XXXXXX) || return 1
	if ((EUID == 0)); then
		chown "$PG_USER:" "$PG_TMPDIR" || { pg_stop; return 1; }
	fi

	# Fast initdb (no fsync of the new files: the cluster is thrown away),
	# C locale so the results do not depend on the machine's locales.
	if ! _pg_as_user "$PG_BINDIR/initdb" --pgdata="$PG_TMPDIR/data" --username="$PG_USER" \
		--auth=trust --encoding=UTF8 --locale=C --no-sync >"$PG_TMPDIR/initdb.log" 2>&1; then
		_pg_log "initdb failed"
		_pg_show_logs
		pg_stop
		return 1
	fi
	cat >>"$PG_TMPDIR/data/postgresql.conf" <<-EOF

		# Added by scripts/pg-start.sh: a throwaway server for tests.
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$PG_TMPDIR'
	EOF

	# Start on a free port; if another process takes the port first, the
	# server cannot bind it: pick another and try again.
	local attempt started=0
	for attempt in 1 2 3 4 5; do
		PG_PORT=$(_pg_free_port) || { _pg_log "no free port found"; break; }
		if _pg_as_user "$PG_BINDIR/pg_ctl" --pgdata="$PG_TMPDIR/data" --log="$PG_TMPDIR/server.log" \
			--options="-p $PG_PORT" --wait --timeout=60 start >"$PG_TMPDIR/pg_ctl.log" 2>&1; then
			started=1
			break
		fi
		if ! grep -qE 'could not bind|already in use' "$PG_TMPDIR/server.log" 2>/dev/null; then
			break
		fi
		_pg_log "port $PG_PORT was taken (attempt $attempt), trying another"
	done
	if ((!started)); then
		_pg_log "the server did not start"
		_pg_show_logs
		pg_stop
		return 1
	fi

	if ! "$PG_BINDIR/createdb" --host=127.0.0.1 --port="$PG_PORT" --username="$PG_USER" \
		"$PG_DATABASE" >"$PG_TMPDIR/createdb.log" 2>&1; then
		_pg_log "createdb $PG_DATABASE failed"
		_pg_show_logs
		pg_stop
		return 1
	fi

	export AGENTMEM_TEST_POSTGRES_URL="postgres://$PG_USER@127.0.0.1:$PG_PORT/$PG_DATABASE?sslmode=disable"
	_pg_log "PostgreSQL $PG_VERSION started on 127.0.0.1:$PG_PORT as $PG_USER, data in $PG_TMPDIR"
}

# pg_stop: stop the server started by pg_start and remove its directory.
# Does nothing when none is running; safe to call from a trap, twice.
pg_stop() {
	[[ -n ${PG_TMPDIR:-} ]] || return 0
	local dir=$PG_TMPDIR pid
	PG_TMPDIR=
	if [[ -f $dir/data/postmaster.pid ]]; then
		if ! _pg_as_user "$PG_BINDIR/pg_ctl" --pgdata="$dir/data" --mode=fast --wait --timeout=30 \
			stop >/dev/null 2>&1; then
			# Stop did not work: kill the postmaster; its backends notice
			# and exit.
			pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
			if [[ $pid =~ ^[0-9]+$ ]]; then
				_pg_log "pg_ctl stop failed; killing postmaster $pid"
				kill -KILL "$pid" 2>/dev/null || true
				sleep 1
			fi
		fi
	fi
	rm -rf "$dir"
	unset AGENTMEM_TEST_POSTGRES_URL
}

# Run as a program rather than sourced.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail

	_pg_sleep_pid=
	_pg_main_cleanup() {
		if [[ -n $_pg_sleep_pid ]]; then
			kill "$_pg_sleep_pid" 2>/dev/null || true
		fi
		pg_stop
	}
	trap _pg_main_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP

	if ! bindir=$(pg_find_bindir); then
		_pg_log "no PostgreSQL server programs (initdb, pg_ctl, postgres) found:" \
			"install them (Debian: apt-get install postgresql) or put initdb on PATH"
		exit 1
	fi
	pg_start "$bindir"

	if (($# > 0)); then
		rc=0
		"$@" || rc=$?
		exit "$rc"
	fi
	printf 'export AGENTMEM_TEST_POSTGRES_URL=%q\n' "$AGENTMEM_TEST_POSTGRES_URL"
	_pg_log "running until Ctrl-C (or SIGTERM); then the server is stopped and removed"
	sleep infinity &
	_pg_sleep_pid=$!
	wait "$_pg_sleep_pid"
fi
