#!/usr/bin/env bash
# citus-install.sh: build the Citus extension from its release source and
# install it into a PostgreSQL server's directories, so that the local
# cluster of scripts/citus-start.sh can load it and agentmem's tests run on
# Citus.
#
#   scripts/citus-install.sh [SRC]
#
# SRC is a Citus release tarball (citus-VERSION.tar.gz); without it,
# $CITUS_SRC, else citus-*.tar.gz in the vendor directory: $AGENTMEM_VENDOR,
# else ../shared/vendor beside the repository (where CI's fresh clone finds
# it). A patch named citus-VERSION-pgMAJOR-*.patch beside the tarball is
# applied (vendor/README.md says why). The script never downloads Citus.
#
# The build is cached outside the repository, keyed by the Citus version and
# the server's exact version (the patch depends on the minor release):
# ${AGENTMEM_CACHE:-${XDG_CACHE_HOME:-~/.cache}/agentmem}/citus-VERSION-pgPGVERSION/
# holds the files `make install` wrote (a DESTDIR tree) and a stamp; a later
# run copies them into place without building (seconds instead of ~2
# minutes on 2 cores).
#
# Steps: find the server (pg_find_bindir of scripts/pg-start.sh) and its
# pg_config; stop if its lib directory already has citus.so of this version;
# install the build dependencies with apt-get when they are missing
# (postgresql-server-dev-MAJOR liblz4-dev libzstd-dev libkrb5-dev, make,
# gcc: root or sudo -n); build into the cache unless it is there; copy the
# cached tree into / (the server's lib and share directories: root or sudo
# -n). Without root the build still fills the cache, but the install fails:
# then the Citus tests skip (or, in CI, the run fails).
#
# Exit status: 0 installed (or already there), 3 no source found, 1 any
# other failure.

set -euo pipefail

_ci_log() { printf 'citus-install: %s\n' "$*" >&2; }

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/pg-start.sh
source "$REPO_ROOT/scripts/pg-start.sh"

# vendor_dir: print the directory of the third-party sources.
vendor_dir() {
	local d
	for d in "${AGENTMEM_VENDOR:-}" "$REPO_ROOT/../shared/vendor"; do
		if [[ -n $d && -d $d ]]; then
			(cd "$d" && pwd)
			return 0
		fi
	done
	return 1
}

src=${1:-${CITUS_SRC:-}}
if [[ -z $src ]]; then
	if vd=$(vendor_dir); then
		src=$(find "$vd" -maxdepth 1 -name 'citus-*.tar.gz' | sort -V | tail -n 1)
	fi
fi
if [[ -z $src || ! -f $src ]]; then
	_ci_log "no Citus source (CITUS_SRC, or citus-*.tar.gz in ../shared/vendor): nothing to build"
	exit 3
fi
citus_version=$(basename "$src" .tar.gz)
citus_version=${citus_version#citus-}

SUDO=()
if ((EUID != 0)) && command -v sudo >/dev/null 2>&1; then
	SUDO=(sudo -n)
fi

if ! bindir=$(pg_find_bindir); then
	_ci_log "no PostgreSQL server programs found (Debian: apt-get install postgresql)"
	exit 1
fi
pg_version=$("$bindir/postgres" --version | awk '{print $3}')
major=${pg_version%%.*}

# Installed already? citus.control names the extension's default version,
# which for a release is its major.minor (13.2), and the library is there.
pkglibdir= sharedir=
if [[ -x $bindir/pg_config ]]; then
	pkglibdir=$("$bindir/pg_config" --pkglibdir)
	sharedir=$("$bindir/pg_config" --sharedir)
fi
stamp_name=citus-$citus_version-pg$pg_version
if [[ -n $pkglibdir && -f $pkglibdir/citus.so && -f $sharedir/extension/$stamp_name.installed ]]; then
	_ci_log "Citus $citus_version is already installed for PostgreSQL $pg_version ($pkglibdir/citus.so)"
	exit 0
fi

cache=${AGENTMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentmem}/$stamp_name
if [[ ! -f $cache/stamp ]]; then
	have_dev() {
		[[ -x $bindir/pg_config ]] &&
			[[ -f $("$bindir/pg_config" --pgxs) ]] &&
			[[ -f $("$bindir/pg_config" --includedir-server)/postgres.h ]] &&
			[[ -f /usr/include/lz4.h && -f /usr/include/zstd.h ]] &&
			[[ -f /usr/include/gssapi/gssapi.h || -f /usr/include/krb5.h ]]
	}
	if ! have_dev; then
		deps=("postgresql-server-dev-$major" liblz4-dev libzstd-dev libkrb5-dev make gcc)
		_ci_log "installing ${deps[*]} with apt-get"
		if ! command -v apt-get >/dev/null 2>&1 || { ((EUID != 0)) && ((${#SUDO[@]} == 0)); }; then
			_ci_log "cannot install ${deps[*]} (needs apt-get and root or sudo)"
			exit 1
		fi
		apt_log=$(mktemp /tmp/agentmem-citus-apt.XXXXXX)
		if ! { "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q &&
			"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
				install -y -q "${deps[@]}"; } >"$apt_log" 2>&1; then
			tail -n 30 "$apt_log" >&2
			rm -f "$apt_log"
			_ci_log "apt-get install failed"
			exit 1
		fi
		rm -f "$apt_log"
		# The server's point release may have moved with its dev package.
		pg_version=$("$bindir/postgres" --version | awk '{print $3}')
		stamp_name=citus-$citus_version-pg$pg_version
		cache=${AGENTMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentmem}/$stamp_name
		pkglibdir=$("$bindir/pg_config" --pkglibdir)
		sharedir=$("$bindir/pg_config" --sharedir)
	fi
fi

if [[ ! -f $cache/stamp ]]; then
	tmp=$(mktemp -d /tmp/agentmem-citus.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	tar -xzf "$src" -C "$tmp"
	work=$tmp/citus-$citus_version
	if [[ ! -f $work/configure ]]; then
		_ci_log "$src does not unpack to citus-$citus_version/configure"
		exit 1
	fi
	chmod -R u+w "$tmp"
	for p in "$(dirname "$src")"/citus-"$citus_version"-pg"$major"-*.patch; do
		[[ -f $p ]] || continue
		_ci_log "applying $(basename "$p")"
		patch -s -d "$work" -p1 <"$p"
	done
	_ci_log "building Citus $citus_version for PostgreSQL $pg_version (about 2 minutes on 2 cores; cached in $cache)"
	(
		cd "$work"
		PG_CONFIG=$bindir/pg_config ./configure --without-libcurl >"$tmp/build.log" 2>&1
		make -s -j"$(nproc)" >>"$tmp/build.log" 2>&1
		rm -rf "$tmp/dest"
		make -s install DESTDIR="$tmp/dest" >>"$tmp/build.log" 2>&1
	) || {
		tail -n 30 "$tmp/build.log" >&2
		_ci_log "building Citus failed"
		exit 1
	}
	mkdir -p "$(dirname "$cache")"
	rm -rf "$cache.new"
	mkdir -p "$cache.new"
	cp -a "$tmp/dest" "$cache.new/root"
	date -u +%FT%TZ >"$cache.new/stamp"
	rm -rf "$cache"
	mv "$cache.new" "$cache"
	_ci_log "built Citus $citus_version into $cache"
fi

# Copy the cached tree into place (the server's lib and share directories).
if ((EUID != 0)) && ((${#SUDO[@]} == 0)); then
	_ci_log "Citus is built ($cache) but installing it into $pkglibdir needs root (or sudo -n)"
	exit 1
fi
# --remove-destination: a new file, not the old one rewritten in place,
# which would corrupt a library a running server has mapped.
if ! "${SUDO[@]}" cp -R --no-preserve=ownership --remove-destination "$cache/root/." /; then
	_ci_log "copying $cache/root into / failed"
	exit 1
fi
"${SUDO[@]}" touch "$sharedir/extension/$stamp_name.installed"
_ci_log "installed Citus $citus_version into $pkglibdir"
