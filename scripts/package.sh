#!/usr/bin/env bash
# Builds the nodecheck packages: scripts/package.sh [deb] [rpm]   (both when none is named)
#                 scripts/package.sh --print-version     (the package version only; no build)
#
# Builds the binary with cgo (the NVML adapter needs it), generates its man pages and shell
# completions with a build of it that has the hidden `gen-docs` verb (the gendocs build tag,
# cmd/nodecheck/gendocs.go; the shipped binary leaves the man-page renderer out, docs/speed.md), and
# packs them with nfpm (scripts/nfpm.yaml) into dist/. Needs go and gcc; nfpm is installed with
# `go install` on first use.
#
# Environment:
#   VERSION        what `nodecheck version` prints (default: git describe --tags --always --dirty)
#   PKG_VERSION    the package version (default: derived from VERSION, see pkg_version)
#   DIST           where the packages go (default: dist, which git ignores)
#   NFPM           an nfpm binary to use instead of installing NFPM_VERSION
#   SOURCE_DATE_EPOCH  file times and man page dates (default: the commit's time), so that two
#                  builds of one commit give the same pages
set -euo pipefail
cd "$(dirname "$0")/.."

NFPM_VERSION=v2.48.0
# A cgo build links against the build machine's glibc. On Debian 12 (glibc 2.36) the binary
# needs symbols up to GLIBC_2.34 (the release that moved libpthread and libdl into libc), so it
# runs on Debian 12+, Ubuntu 22.04+, RHEL/Rocky/Alma 9+. The build fails if it needs more.
GLIBC_FLOOR=2.34

die() { echo "package.sh: $*" >&2; exit 1; }

if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null) || die "not a git checkout: set VERSION"
fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# is_commit_hash says whether a `git describe --always` string is a bare commit hash, which it
# prints when no tag is reachable. A hash must never become the version: "7543d79" starts
# with a digit, and dpkg and rpm would sort it as a version number, above the untagged builds
# that come after it ("1a2b3c4" < "7543d79"). A hash is 7 to 40 hex digits that do not name a
# tag; one of digits only (which a version such as "20250102" also is) must be a commit git
# knows.
is_commit_hash() {
	[[ $1 =~ ^[0-9a-f]{7,40}$ ]] || return 1
	local git=
	git rev-parse --git-dir >/dev/null 2>&1 && git=1
	if [ -n "$git" ] && { git rev-parse -q --verify "refs/tags/$1" || git rev-parse -q --verify "refs/tags/v$1"; } >/dev/null; then
		return 1
	fi
	[[ $1 =~ [a-f] ]] || { [ -n "$git" ] && git cat-file -e "$1^{commit}" 2>/dev/null; }
}

# pkg_version turns a `git describe` string into a version that dpkg and rpm both order right:
#   v1.2.0            -> 1.2.0
#   v1.2.0-rc1        -> 1.2.0~rc1                        (before 1.2.0)
#   v1.2.0-5-gabc1234 -> 1.2.0+5.gabc1234                 (after 1.2.0, before the next tag)
#   abc1234 (no tag)  -> 0.0.0+git20250102150405.abc1234  (commit time: later commits sort later,
#                                                          and all before the first tag)
# and -dirty becomes .dirty. TestPackageVersion checks the order with dpkg and rpm.
pkg_version() {
	local v=${1#v} dirty=
	if [[ $v == *-dirty ]]; then
		v=${v%-dirty}
		dirty=.dirty
	fi
	if is_commit_hash "${1%-dirty}"; then
		echo "0.0.0+git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).${1%-dirty}${dirty}"
	elif [[ $v =~ ^([0-9][0-9A-Za-z.~+-]*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
		local base=${BASH_REMATCH[1]}
		echo "${base//-/\~}+${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}${dirty}"
	elif [[ $v =~ ^[0-9][0-9A-Za-z.~+-]*$ ]]; then
		echo "${v//-/\~}${dirty}"
	else
		echo "0.0.0+git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).${v//[^0-9A-Za-z]/}${dirty}"
	fi
}
PKG_VERSION=${PKG_VERSION:-$(pkg_version "$VERSION")}
[[ $PKG_VERSION =~ ^[0-9][0-9A-Za-z.+~]*$ ]] ||
	die "package version \"$PKG_VERSION\" (from VERSION \"$VERSION\"): want a digit first, then letters, digits, . + ~"
if [ "${1:-}" = "--print-version" ]; then
	# For tests and release scripts: the package version this build would get, and no build.
	echo "$PKG_VERSION"
	exit 0
fi

formats=("$@")
[ ${#formats[@]} -gt 0 ] || formats=(deb rpm)
for f in "${formats[@]}"; do
	case $f in deb | rpm) ;; *) die "unknown package format \"$f\": want deb or rpm" ;; esac
done

command -v go >/dev/null || die "go is not on PATH"
command -v gcc >/dev/null || die "gcc is not on PATH: the NVML adapter needs cgo (apt-get install gcc)"
command -v objdump >/dev/null || die "objdump is not on PATH (apt-get install binutils)"

DIST=${DIST:-dist}
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
NODECHECK_STAGE=$(mktemp -d)
trap 'rm -rf "$NODECHECK_STAGE"' EXIT
GOARCH=$(go env GOARCH)
export GOARCH PKG_VERSION GLIBC_FLOOR NODECHECK_STAGE

echo "package.sh: nodecheck $VERSION, package version $PKG_VERSION, linux/$GOARCH"

# The binary. go-nvml's header marks about a hundred of the calls it wraps as deprecated, and
# gcc warns about each when it compiles go-nvml's cgo code: -Wno-deprecated-declarations keeps
# that out (it cannot be set from the source: docs/install.md; CGO_CFLAGS replaces Go's
# default -g -O2, hence both). Other output is shown only on failure.
export CGO_CFLAGS="${CGO_CFLAGS:--g -O2} -Wno-deprecated-declarations"
if ! out=$(CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$NODECHECK_STAGE/nodecheck" ./cmd/nodecheck 2>&1); then
	printf '%s\n' "$out" >&2
	die "go build failed"
fi

# The glibc floor the packages declare (libc6 (>= 2.34), glibc >= 2.34) must cover the binary.
glibc=$(objdump -T "$NODECHECK_STAGE/nodecheck" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n1)
[ -n "$glibc" ] || die "the binary references no GLIBC_ symbol version: was it built without cgo?"
if [ "$(printf '%s\n%s\n' "$glibc" "$GLIBC_FLOOR" | sort -V | tail -n1)" != "$GLIBC_FLOOR" ]; then
	die "the binary needs glibc $glibc, newer than GLIBC_FLOOR $GLIBC_FLOOR: build on Debian 12, or raise the floor and the supported distributions in README.md"
fi
echo "package.sh: the binary needs glibc >= $glibc (declared: >= $GLIBC_FLOOR)"

# Man pages and completions, from the command definitions: the same commands with the hidden
# gen-docs verb added (-tags gendocs), built without cgo (the command tree does not depend on
# it), run once and not packaged.
gendocs="$NODECHECK_STAGE/gendocs/nodecheck"
if ! out=$(CGO_ENABLED=0 go build -tags gendocs -trimpath -ldflags "-X main.version=$VERSION" -o "$gendocs" ./cmd/nodecheck 2>&1); then
	printf '%s\n' "$out" >&2
	die "go build -tags gendocs failed"
fi
"$gendocs" gen-docs --man "$NODECHECK_STAGE/man" --completions "$NODECHECK_STAGE/completions"
rm -r "$NODECHECK_STAGE/gendocs"
gzip -9n "$NODECHECK_STAGE"/man/*.1

if [ -n "${NFPM:-}" ]; then
	nfpm=$NFPM
else
	nfpm=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/nodecheck/nfpm-$NFPM_VERSION/nfpm
	if [ ! -x "$nfpm" ]; then
		echo "package.sh: installing nfpm $NFPM_VERSION (about a minute, once)"
		GOBIN=$(dirname "$nfpm") CGO_ENABLED=0 go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
	fi
fi

for f in "${formats[@]}"; do
	"$nfpm" package --config scripts/nfpm.yaml --packager "$f" --target "$DIST/"
done
