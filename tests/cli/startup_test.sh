#!/bin/sh
# What a run maps at start-up (docs/benchmarks.md, "Start-up"): the
# libraries of the optional formats and MPI are loaded when an input (or
# --mpi) first needs them, so a run over a PNG maps none of them; a TIFF
# run maps libtiff (the check's own control); a library that cannot be
# loaded fails only the inputs that need it, with a message naming the
# input and the library (IMGSTAT_DLOPEN_DISABLE makes the load fail), the
# other inputs read; --version lists the libraries and says which cannot
# be loaded. What is mapped is read from the dynamic loader's own trace
# (LD_DEBUG=files), not timed: machines differ in speed.
# Usage: sh tests/cli/startup_test.sh PATH/TO/imgstat TESTS_DATA_DIR
set -u

IMGSTAT=${1:?usage: startup_test.sh IMGSTAT DATA}
DATA=${2:?usage: startup_test.sh IMGSTAT DATA}
. "$(dirname "$0")/../support/lib.sh"
lib_tmpdir startup_test
png=$DATA/formats/rgb.png
tif=$DATA/seeds/pil-palette.tif
fits=$DATA/seeds/tiled-gzip1-u8.fits
plain_fits=$DATA/seeds/i16-blank.fits
gif=$DATA/formats/pal.gif
"$IMGSTAT" --version >"$T/version" 2>&1

# the objects a run maps, one name a line, from the loader's trace
mapped() {
  LD_DEBUG=files "$@" 2>&1 >/dev/null |
    sed -n 's/.*file=\([^ ]*\) *\[[0-9]*\]; *\(needed\|dynamically loaded\|generating link map\).*/\1/p' |
    sort -u
}

# 1. a PNG run: none of the loaded-when-needed libraries (nor what they
# pull in: cfitsio's network chain, Open MPI's)
mapped "$IMGSTAT" "$png" >"$T/png.maps"
if [ ! -s "$T/png.maps" ]; then
  fail "LD_DEBUG=files printed no trace for the PNG run"
else
  bad=$(grep -E 'lib(tiff|webp|webpdemux|cfitsio|gif|mpi|open-pal|open-rte|curl[^ ]*|ssl|gnutls|hwloc|archive|xml2|nettle|zstd|lzma|bz2|lz4)\.so' "$T/png.maps" | tr '\n' ' ')
  if [ -n "$bad" ]; then fail "a PNG run maps $bad"; else
    pass "a PNG run maps $(wc -l <"$T/png.maps") objects, none of the optional formats' or MPI's"; fi
fi

# 2. the control: a TIFF run maps libtiff, after its start
if grep -q 'TIFF (libtiff)' "$T/version"; then
  mapped "$IMGSTAT" "$tif" >"$T/tif.maps"
  if grep -q 'libtiff\.so' "$T/tif.maps"; then pass "a TIFF run maps libtiff"; else
    fail "a TIFF run does not map libtiff: $(tr '\n' ' ' <"$T/tif.maps")"; fi
fi

# 3. --version: every library loaded when needed, and that each loads here
if grep -q '^loaded when needed: ' "$T/version"; then
  if grep '^loaded when needed: ' "$T/version" | grep -q 'NOT LOADABLE'; then
    fail "--version says a library cannot be loaded: $(grep '^loaded when needed' "$T/version")"
  else pass "--version lists the libraries loaded when needed"; fi
  IMGSTAT_DLOPEN_DISABLE=giflib,libtiff "$IMGSTAT" --version >"$T/version2" 2>&1
  if grep -q 'TIFF (libtiff)' "$T/version" &&
    ! grep '^loaded when needed: ' "$T/version2" | grep -q 'libtiff[^;]*(TIFF): NOT LOADABLE'; then
    fail "--version does not say libtiff cannot be loaded: $(cat "$T/version2")"
  else pass "--version says which library cannot be loaded"; fi
elif grep -Eq 'TIFF \(libtiff\)|FITS \(cfitsio\)|GIF \(giflib\)|WebP \(libwebp\)' "$T/version"; then
  fail "--version has no 'loaded when needed' line: $(cat "$T/version")"
fi

# 4. a library that cannot be loaded: the inputs that need it fail with the
# reason, named; the others are read
missing() { # LIBRARY INPUT FORMAT SONAME-PREFIX
  IMGSTAT_DLOPEN_DISABLE=$1 "$IMGSTAT" "$2" "$png" >"$T/stdout" 2>"$T/stderr"
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q "$2: $3 needs $4[^ ]*, which could not be loaded: " "$T/stderr" &&
    grep -q "rgb.png" "$T/stdout" && ! grep -q "$(basename "$2")" "$T/stdout"; then
    pass "$1 missing: $(basename "$2") fails with its reason, the PNG is read"
  else
    fail "$1 missing: exit $rc (expected 1), stderr: $(cat "$T/stderr") stdout: $(cat "$T/stdout")"
  fi
}
if grep -q 'FITS (cfitsio)' "$T/version"; then
  missing cfitsio "$fits" "tile-compressed FITS" libcfitsio
  # an uncompressed FITS is read by imgstat's own reader: cfitsio not needed
  expect 0 "cfitsio missing: an uncompressed FITS is read" \
    env IMGSTAT_DLOPEN_DISABLE=cfitsio "$IMGSTAT" "$plain_fits"
fi
grep -q 'TIFF (libtiff)' "$T/version" && missing libtiff "$tif" TIFF libtiff
grep -q 'GIF (giflib)' "$T/version" && missing giflib "$gif" GIF libgif
# an archive (a tar of the PNG, written here): libarchive is loaded by the
# first archive, and without it the archive fails with the reason
if grep -q '^archives: tar, zip (libarchive [0-9]' "$T/version"; then
  (cd "$(dirname "$png")" && tar cf "$T/rgb.tar" "$(basename "$png")")
  missing libarchive "$T/rgb.tar" archives libarchive
  mapped "$IMGSTAT" "$T/rgb.tar" >"$T/tar.maps"
  if grep -q 'libarchive\.so' "$T/tar.maps"; then pass "a tar run maps libarchive"; else
    fail "a tar run does not map libarchive: $(tr '\n' ' ' <"$T/tar.maps")"; fi
fi

# 5. --mpi without its library: the reason, exit 1, no crash
if grep -q 'libmpi[^ ]* (MPI)' "$T/version"; then
  IMGSTAT_DLOPEN_DISABLE=MPI "$IMGSTAT" --mpi "$png" >"$T/stdout" 2>"$T/stderr"
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "MPI needs libmpi[^ ]*, which could not be loaded" "$T/stderr"; then
    pass "--mpi without its library: exit $rc with the reason"
  else fail "--mpi without its library: exit $rc, stderr: $(cat "$T/stderr")"; fi
fi

echo "startup_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
