#!/bin/sh
# --jpeg-decoder and --jpeg-check without a GPU: the values and
# their usage errors; gpu fails each input with the reason, as --backend gpu
# does; auto and cpu give the CPU decoders' records (the same as without the
# option); a libnvjpeg that cannot be loaded is said by --version and
# changes nothing else. With a GPU (tests/gpu/checks/nvjpeg_test.sh) this script
# is not the one that checks the GPU's records.
# Usage: sh tests/cli/jpeg_decoder_test.sh PATH/TO/imgstat SAMPLES_DIR
set -u

IMGSTAT=${1:?usage: jpeg_decoder_test.sh IMGSTAT SAMPLES}
SAMPLES=${2:?usage: jpeg_decoder_test.sh IMGSTAT SAMPLES}
. "$(dirname "$0")/../support/lib.sh"
lib_tmpdir jpeg_decoder_test
jpg=$SAMPLES/testorig.jpg

expect 2 "a bad --jpeg-decoder" "$IMGSTAT" --jpeg-decoder fast "$jpg"
grep -q "jpeg-decoder: 'fast' is not auto, cpu or gpu" "$T/stderr" ||
  fail "the message of a bad --jpeg-decoder"
expect 2 "a bad --jpeg-check" "$IMGSTAT" --jpeg-check huffman "$jpg"
grep -q "jpeg-check: 'huffman' is not markers, full or none" "$T/stderr" ||
  fail "the message of a bad --jpeg-check"
expect 2 "--jpeg-decoder gpu with --backend cpu" \
  "$IMGSTAT" --jpeg-decoder gpu --backend cpu "$jpg"
grep -q "cannot be used with --backend cpu" "$T/stderr" ||
  fail "the message of --jpeg-decoder gpu --backend cpu"

"$IMGSTAT" --json --backend cpu "$jpg" >"$T/ref" 2>&1 || fail "reference run"
for d in auto cpu; do
  expect 0 "--jpeg-decoder $d" "$IMGSTAT" --json --jpeg-decoder $d "$jpg"
  if cmp -s "$T/stdout" "$T/ref"; then pass; else
    fail "--jpeg-decoder $d: records differ"; fi
done
# a folder (several workers), auto: the same records
mkdir "$T/dir"
cp "$jpg" "$T/dir/a.jpg"
cp "$jpg" "$T/dir/b.jpg"
expect 0 "a folder with --jpeg-decoder auto" "$IMGSTAT" --json "$T/dir"
[ "$(grep -c '"file"' "$T/stdout")" = 2 ] || fail "two records"

# no GPU here (or no nvJPEG): gpu fails every input, with the reason
if [ -z "${IMGSTAT_HAVE_GPU:-}" ]; then
  IMGSTAT_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13 \
    expect 1 "--jpeg-decoder gpu without nvJPEG" \
    "$IMGSTAT" --jpeg-decoder gpu "$jpg" "$jpg"
  [ "$(grep -c 'jpeg-decoder gpu needs a usable GPU' "$T/stderr")" = 2 ] ||
    { fail "the message of --jpeg-decoder gpu"; sed 's/^/  | /' "$T/stderr"; }
fi
IMGSTAT_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13 \
  expect 0 "--version without libnvjpeg" "$IMGSTAT" --version
grep -Eq "^nvJPEG: (not compiled in|compiled in; not loaded \(.*nonexistent)" \
  "$T/stdout" || { fail "--version's nvJPEG line"; cat "$T/stdout"; }
IMGSTAT_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13 \
  expect 0 "auto without libnvjpeg" "$IMGSTAT" --json "$jpg"
cmp -s "$T/stdout" "$T/ref" || fail "auto without libnvjpeg: records differ"

echo "jpeg_decoder_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
