#!/usr/bin/env bash
# pgvector-install.sh: build the pgvector extension from a source tree and
# install it into a PostgreSQL server's directories, so that the
# throwaway servers of scripts/pg-start.sh (whose user is a superuser)
# can CREATE EXTENSION vector and recall/postgres's pgvector tests run.
#
#   scripts/pgvector-install.sh [SRC]
#
# SRC is a pgvector source tree (the directory holding its Makefile and
# vector.control) or a .tar.gz of one; without it, $PGVECTOR_SRC. The
# script never downloads pgvector: Debian (bookworm) packages no pgvector
# for PostgreSQL 15, and this project's machines reach nothing but
# package registries, so the source has to be on the machine already (a
# checkout, or a release tarball). With no source it says so and exits 3.
#
# Steps: find the server (pg_find_bindir of scripts/pg-start.sh) and its
# pg_config; stop if its share directory already has vector.control;
# install Debian's postgresql-server-dev-MAJOR (the headers and PGXS) with
# apt-get when they are missing; copy the source to a temporary directory
# (the source may be read-only); `make` and `make install` with that
# pg_config. Installing writes to the server's lib and share directories:
# run it as root (or with sudo -n available).
#
# Exit status: 0 installed (or already there), 3 no source given, 1 any
# other failure.

set -euo pipefail

_pgv_log() { printf 'pgvector-install: %s\n' "$*" >&2; }

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/pg-start.sh
source "$REPO_ROOT/scripts/pg-start.sh"

src=${1:-${PGVECTOR_SRC:-}}

SUDO=()
if ((EUID != 0)); then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo -n)
	fi
fi

if ! bindir=$(pg_find_bindir); then
	_pgv_log "no PostgreSQL server programs found (Debian: apt-get install postgresql)"
	exit 1
fi
version=$("$bindir/postgres" --version | awk '{print $3}')
major=${version%%.*}

# pg_config of that server: beside it, else Debian's wrapper.
pg_config=$bindir/pg_config
if [[ ! -x $pg_config ]]; then
	pg_config=$(command -v pg_config || true)
fi
sharedir=
if [[ -n $pg_config && -x $pg_config ]]; then
	sharedir=$("$pg_config" --sharedir)
fi
if [[ -n $sharedir && -f $sharedir/extension/vector.control ]]; then
	_pgv_log "pgvector is already installed for PostgreSQL $version ($sharedir/extension/vector.control)"
	exit 0
fi

if [[ -z $src ]]; then
	_pgv_log "pgvector is not installed for PostgreSQL $version, and no source was given" \
		"(scripts/pgvector-install.sh SRC, or PGVECTOR_SRC=SRC): nothing to build"
	exit 3
fi
if [[ -d $src && ! -f $src/vector.control ]] || [[ ! -d $src && $src != *.tar.gz && $src != *.tgz ]]; then
	_pgv_log "$src is neither a pgvector source tree (with vector.control) nor a .tar.gz of one"
	exit 1
fi

# The headers and PGXS for this major version.
# (The server package ships pgxs.mk but not the server headers.)
have_dev() {
	[[ -x $bindir/pg_config ]] &&
		[[ -f $("$bindir/pg_config" --pgxs) ]] &&
		[[ -f $("$bindir/pg_config" --includedir-server)/postgres.h ]]
}
if ! have_dev; then
	_pgv_log "installing postgresql-server-dev-$major (headers and PGXS) with apt-get"
	if ! command -v apt-get >/dev/null 2>&1 || { ((EUID != 0)) && ((${#SUDO[@]} == 0)); }; then
		_pgv_log "cannot install postgresql-server-dev-$major (needs apt-get and root or sudo)"
		exit 1
	fi
	# It pulls the server's packages up to the same point release.
	apt_log=$(mktemp /tmp/agentmem-pgvector-apt.XXXXXX)
	if ! { "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q &&
		"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
			install -y -q "postgresql-server-dev-$major" make gcc; } >"$apt_log" 2>&1; then
		tail -n 30 "$apt_log" >&2
		rm -f "$apt_log"
		_pgv_log "apt-get install postgresql-server-dev-$major failed"
		exit 1
	fi
	rm -f "$apt_log"
fi
if ! have_dev; then
	_pgv_log "no server headers for PostgreSQL $major in $bindir/pg_config --includedir-server after installing postgresql-server-dev-$major"
	exit 1
fi
pg_config=$bindir/pg_config

tmp=$(mktemp -d /tmp/agentmem-pgvector.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
work=$tmp
if [[ -d $src ]]; then
	cp -R "$src/." "$work/"
else
	tar -xzf "$src" -C "$work"
	# A release tarball holds one top directory.
	if [[ ! -f $work/Makefile ]]; then
		top=$(find "$work" -mindepth 2 -maxdepth 2 -name vector.control -printf '%h\n' | head -n 1)
		if [[ -n $top ]]; then
			work=$top
		fi
	fi
fi
chmod -R u+w "$tmp"
if [[ ! -f $work/Makefile || ! -f $work/vector.control ]]; then
	_pgv_log "$src is not a pgvector source tree (no Makefile and vector.control)"
	exit 1
fi

_pgv_log "building pgvector from $src for PostgreSQL $version ($pg_config)"
# OPTFLAGS="": no -march=native, so the library runs on any x86-64.
make -C "$work" -s PG_CONFIG="$pg_config" OPTFLAGS="" >"$tmp/build.log" 2>&1 || {
	tail -n 30 "$tmp/build.log" >&2
	_pgv_log "make failed"
	exit 1
}
"${SUDO[@]}" make -C "$work" -s PG_CONFIG="$pg_config" OPTFLAGS="" install >>"$tmp/build.log" 2>&1 || {
	tail -n 30 "$tmp/build.log" >&2
	_pgv_log "make install failed"
	exit 1
}
_pgv_log "installed pgvector $(awk -F"'" '/default_version/ {print $2}' "$work/vector.control") into $("$pg_config" --sharedir)/extension"
