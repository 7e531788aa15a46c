#!/bin/sh
# tools/version.sh prints podrun's version as semver: the tag vX.Y.Z on a
# tagged commit; otherwise the next version after the last tag (v0.1.0 with no
# tag yet) as a pre-release counting the commits, with the commit as build
# metadata: v0.1.0-dev.523+g26948ca (and .dirty for uncommitted changes).
set -eu
cd "$(dirname "$0")/.."
dirty=""
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=".dirty"
if tag=$(git describe --tags --exact-match --match 'v[0-9]*.[0-9]*.[0-9]*' 2>/dev/null); then
	echo "$tag${dirty:++dirty}"
	exit 0
fi
sha=$(git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
if last=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' 2>/dev/null); then
	n=$(git rev-list --count "$last..HEAD")
	base=$(echo "${last#v}" | awk -F. '{printf "%d.%d.%d", $1, $2, $3 + 1}')
else
	n=$(git rev-list --count HEAD 2>/dev/null || echo 0)
	base=0.1.0
fi
echo "v$base-dev.$n+g$sha$dirty"
