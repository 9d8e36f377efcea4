#!/bin/sh
# render-timeline.sh renders fencesim's HTML timeline to a PNG with headless
# Chromium, so the picture can be looked at (and docs/img/kleppmann.png
# regenerated). It installs Debian's chromium package when it is missing.
#
#   scripts/render-timeline.sh [OUT.png [HTML [WIDTH,HEIGHT]]]
#
# Without HTML it first writes the kleppmann scenario (fencing off and on)
# with `go run ./cmd/fencesim -html` (from any directory). Defaults: OUT
# docs/img/kleppmann.png in the repository, window 1180x1880 (the whole
# kleppmann page). Exit status is non-zero when any step fails.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/img/kleppmann.png}
src=${2:-}
size=${3:-1180,1880}

if ! command -v chromium >/dev/null 2>&1; then
	echo "render-timeline: chromium not found; installing Debian's chromium package" >&2
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$src" ]; then
	src=$tmp/kleppmann.html
	go -C "$root" run ./cmd/fencesim -html "$src" kleppmann >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
fi
case $src in
/*) abs=$src ;;
*) abs=$(pwd)/$src ;;
esac
[ -f "$abs" ] || { echo "render-timeline: $abs: no such file" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$tmp/profile" \
	--screenshot="$tmp/shot.png" --window-size="$size" "file://$abs" >/dev/null 2>&1
[ -s "$tmp/shot.png" ] || { echo "render-timeline: chromium wrote no screenshot" >&2; exit 1; }
cp "$tmp/shot.png" "$out"
echo "render-timeline: wrote $out from $abs"
