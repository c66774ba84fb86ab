#!/bin/sh
# Example vidfarm external runner, protocol vidfarm.render.v1.
# Reads the request (one JSON object) on stdin, prints "progress N" lines on
# stdout, writes an MP4 to output_path and exits 0. A real runner would run
# its model here; this one draws ffmpeg's test pattern. Real runners should
# parse the request with a JSON library: this sed only handles simple values.
set -eu
req=$(cat)
field() { printf '%s' "$req" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tr -d '"'; }
out=$(field output_path)
w=$(field width)
h=$(field height)
fps=$(field fps)
dur=$(field duration_seconds)
echo "progress 5"
# Anything but progress lines goes to stderr; its tail is shown on failure.
ffmpeg -v error -nostdin -y -f lavfi -i "testsrc2=s=${w}x${h}:r=${fps}:d=${dur}" \
  -c:v libx264 -preset ultrafast -pix_fmt yuv420p "$out" >&2
echo "progress 100"
