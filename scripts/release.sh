#!/usr/bin/env bash
# release.sh: build agentmem's release archives.
#
#   scripts/release.sh [-o DIR] [-t "OS/ARCH ..."] VERSION
#
#   e.g. scripts/release.sh v0.3.0
#        scripts/release.sh -o /tmp/rel -t "linux/amd64 windows/arm64" v0.3.0-rc1
#
# For each target (default: linux, darwin and windows on amd64 and arm64) it
# cross-compiles cmd/agentmem with cgo off (the SQLite driver is pure Go),
# stamps the version, the commit and the build date into it (what
# `agentmem --version` prints), and packs it with LICENSE, NOTICE and
# README.md: agentmem_VERSION_OS_ARCH.tar.gz, or .zip for Windows. It
# writes SHA256SUMS beside the archives, in the form `sha256sum -c` reads.
#
# The archives go to DIR (default dist/ in the repository, which git
# ignores). The build is reproducible: -trimpath, no VCS stamp of the
# builder's paths, and the files in each archive dated by the commit.
#
# Needs: go, git, tar, gzip, and zip for the Windows archives.
set -euo pipefail

usage() {
	sed -n 's/^#   //p' "${BASH_SOURCE[0]}" | head -1 >&2
	exit 2
}

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$REPO_ROOT/dist"
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
while getopts "o:t:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	t) targets=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 1)) || usage
version=$1
if [[ ! $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$ ]]; then
	echo "release.sh: the version must be a semantic version with a v, like v1.2.3 or v1.2.3-rc1, not \"$version\"" >&2
	exit 2
fi

cd "$REPO_ROOT"
commit=$(git rev-parse HEAD)
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
	commit="$commit-dirty"
fi
# The commit's time, not the clock's: the same commit builds the same bytes.
epoch=$(git log -1 --format=%ct HEAD)
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date"

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

archives=()
for target in $targets; do
	os=${target%/*} arch=${target#*/}
	if [[ -z $os || -z $arch || $target != */* ]]; then
		echo "release.sh: a target is OS/ARCH, like linux/amd64, not \"$target\"" >&2
		exit 2
	fi
	name="agentmem_${version#v}_${os}_${arch}"
	dir="$work/$name"
	mkdir -p "$dir"
	exe=agentmem
	[[ $os == windows ]] && exe=agentmem.exe
	echo "release.sh: building $target" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS=-buildvcs=false \
		go build -trimpath -ldflags "$ldflags" -o "$dir/$exe" ./cmd/agentmem
	cp LICENSE NOTICE README.md "$dir/"
	touch -d "@$epoch" "$dir" "$dir"/*
	if [[ $os == windows ]]; then
		archive="$name.zip"
		rm -f "$out/$archive"
		(cd "$work" && TZ=UTC zip -q -X -r "$out/$archive" "$name")
	else
		archive="$name.tar.gz"
		tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
			-cf - "$name" | gzip -n >"$out/$archive"
	fi
	archives+=("$archive")
done

(cd "$out" && sha256sum "${archives[@]}" >SHA256SUMS)
for a in "${archives[@]}"; do
	echo "$out/$a"
done
echo "$out/SHA256SUMS"
