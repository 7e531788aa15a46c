#!/bin/sh
# busybox-image.sh OUT.tar [TAG] [FORMAT]
#
# Builds the busybox test image that podrun's tests and CI use, from Debian's
# busybox-static package (no registry needed):
#   - TAG defaults to busybox:1.28, FORMAT to docker-archive (or oci-archive);
#   - the .deb is kept in $PODRUN_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/podrun);
#     `apt-get download` fetches it, after `apt-get update` only if the first try fails;
#   - OUT is reused when it is newer than the .deb and was built with the same TAG and
#     FORMAT (recorded in OUT.stamp);
#   - the rootfs has /bin/busybox, a /bin symlink for every applet (plus the /sbin,
#     /usr/bin and /usr/sbin links busybox --list-full names), /etc/passwd and /etc/group
#     with root and nobody, /tmp (1777), /root, and empty /proc, /sys, /dev;
#   - file times and the creation time are the packaged binary's (SOURCE_DATE_EPOCH), so the
#     same .deb always gives the same image digest.
set -eu

usage() { echo "usage: $0 OUT.tar [TAG] [FORMAT]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 3 ] || usage
OUT=$1
TAG=${2:-busybox:1.28}
FORMAT=${3:-docker-archive}
case $FORMAT in docker-archive|oci-archive) ;; *) echo "$0: FORMAT must be docker-archive or oci-archive" >&2; exit 2 ;; esac

REPO=$(cd "$(dirname "$0")/.." && pwd)
case $OUT in /*) ;; *) OUT=$(pwd)/$OUT ;; esac
CACHE=${PODRUN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/podrun}
mkdir -p "$CACHE" "$(dirname "$OUT")"

deb=$(ls -t "$CACHE"/busybox-static_*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
	# apt-get download writes into the current directory; _apt may need to read it.
	if ! (cd "$CACHE" && apt-get download busybox-static); then
		apt-get update
		(cd "$CACHE" && apt-get download busybox-static)
	fi
	deb=$(ls -t "$CACHE"/busybox-static_*.deb | head -n 1)
fi

stamp="$TAG $FORMAT $(basename "$deb")"
if [ -f "$OUT" ] && [ "$OUT" -nt "$deb" ] && [ -f "$OUT.stamp" ] && [ "$(cat "$OUT.stamp")" = "$stamp" ]; then
	echo "$OUT is up to date ($stamp)"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp/deb"
root=$tmp/rootfs
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/etc" "$root/root" \
	"$root/proc" "$root/sys" "$root/dev" "$root/tmp"
chmod 1777 "$root/tmp"
chmod 700 "$root/root"
cp "$tmp/deb/bin/busybox" "$root/bin/busybox"
chmod 755 "$root/bin/busybox"

for applet in $("$root/bin/busybox" --list); do
	[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
# Other places busybox installs applets (e.g. /usr/bin/env for `#!/usr/bin/env sh`).
for path in $("$root/bin/busybox" --list-full); do
	case $path in
	sbin/* | usr/bin/* | usr/sbin/*) [ -e "$root/$path" ] || ln -s /bin/busybox "$root/$path" ;;
	esac
done

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
EOF
chmod 644 "$root/etc/passwd" "$root/etc/group"

SOURCE_DATE_EPOCH=$(stat -c %Y "$tmp/deb/bin/busybox")
export SOURCE_DATE_EPOCH
(cd "$REPO" && go run -tags "containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper" \
	./tools/mkimage -rootfs "$root" -tag "$TAG" -format "$FORMAT" -o "$OUT.tmp" \
	-env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -cmd sh)
mv -f "$OUT.tmp" "$OUT"
echo "$stamp" >"$OUT.stamp"
echo "wrote $OUT ($stamp)"
