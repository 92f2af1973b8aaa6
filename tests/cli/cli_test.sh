#!/bin/sh
# Command-line tests of imgstat: exit codes, stdout, stderr, JSON validity.
# Usage: sh tests/cli/cli_test.sh PATH/TO/imgstat [tests/data]
#
# The images are made here with printf (PGM/PPM/HDR) from value lists, and
# the expected statistics are computed here with awk from the same lists,
# never taken from the program's output.
set -u

IMGSTAT=${1:?usage: cli_test.sh IMGSTAT [DATA_DIR]}
DATA=${2:-}
case $IMGSTAT in /*) ;; *) IMGSTAT=$(pwd)/$IMGSTAT ;; esac

. "$(dirname "$0")/../support/lib.sh"
lib_tmpdir imgstat-clitest
tmp=$T

# run ARGS...: runs imgstat with stdout in $tmp/out, stderr in $tmp/err and
# the exit status in $rc.
run() {
  "$IMGSTAT" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# expect_rc CODE WHAT
expect_rc() {
  if [ "$rc" -ge 128 ]; then
    fail "$2: crashed (exit $rc); stderr: $(cat "$tmp/err")"
  elif [ "$rc" -ne "$1" ]; then
    fail "$2: exit $rc, expected $1; stderr: $(cat "$tmp/err")"
  else
    pass
  fi
}

# expect_grep FILE FIXED-STRING WHAT
expect_grep() {
  if grep -F -e "$2" "$1" >/dev/null; then pass; else
    fail "$3: '$2' not in $(basename "$1"): $(cat "$1")"
  fi
}

# expect_no_grep FILE FIXED-STRING WHAT: the string is not in the file.
expect_no_grep() {
  if grep -F -e "$2" "$1" >/dev/null; then fail "$3: $(cat "$1")"; else
    pass
  fi
}

lines() { wc -l <"$1" | tr -d ' '; }

# ---- making images ---------------------------------------------------------

# values N SEED MAX: N pseudo-random integers in 0..MAX (a small LCG).
values() {
  awk -v n="$1" -v s="$2" -v m="$3" 'BEGIN {
    for (i = 0; i < n; i++) { s = (s * 75 + 74) % 65537; printf "%d ", s % (m + 1) }
  }'
}

# set_values "LIST" POS=VAL...: the list with some positions replaced.
set_values() {
  list=$1
  shift
  echo "$list" | awk -v sets="$*" '{
    n = split(sets, a, " ")
    for (i = 1; i <= n; i++) { split(a[i], kv, "="); $(kv[1] + 1) = kv[2] }
    print
  }'
}

# bytes FILE BYTES-PER-SAMPLE "LIST": appends the samples as raw bytes
# (big-endian for 2 bytes, as PNM stores them).
bytes() {
  fmt=$(echo "$3" | awk -v b="$2" '{
    for (i = 1; i <= NF; i++)
      if (b == 2) printf "\\%03o\\%03o", int($i / 256), $i % 256
      else printf "\\%03o", $i
  }')
  # shellcheck disable=SC2059 # the format is made of octal escapes only
  printf "$fmt" >>"$1"
}

# pnm FILE MAGIC W H MAXVAL "LIST"
pnm() {
  printf 'P%s\n%s %s\n%s\n' "$2" "$3" "$4" "$5" >"$1"
  if [ "$5" -gt 255 ]; then bytes "$1" 2 "$6"; else bytes "$1" 1 "$6"; fi
}

# expected W H CHANNELS DDOF "LIST": one line per channel,
# "name count min max min_x min_y max_x max_y sum sum_sq mean std" (std "null"
# when there are not more samples than ddof); two-pass mean and variance.
expected() {
  echo "$5" | awk -v w="$1" -v h="$2" -v ch="$3" -v ddof="$4" '
  { for (i = 1; i <= NF; i++) v[i - 1] = $i }
  END {
    if (ch == 1) split("Y", names, " ")
    else if (ch == 2) split("Y A", names, " ")
    else if (ch == 3) split("R G B", names, " ")
    else split("R G B A", names, " ")
    n = w * h
    for (c = 0; c < ch; c++) {
      mn = v[c]; mx = v[c]; mi = 0; ma = 0; sum = 0; sq = 0
      for (p = 0; p < n; p++) {
        x = v[p * ch + c]
        if (x < mn) { mn = x; mi = p }
        if (x > mx) { mx = x; ma = p }
        sum += x; sq += x * x
      }
      mean = sum / n; ss = 0
      for (p = 0; p < n; p++) { d = v[p * ch + c] - mean; ss += d * d }
      std = n > ddof ? sprintf("%.17g", sqrt(ss / (n - ddof))) : "null"
      printf "%s %d %d %d %d %d %d %d %.0f %.0f %.17g %s\n", names[c + 1], n, mn,
             mx, mi % w, int(mi / w), ma % w, int(ma / w), sum, sq, mean, std
    }
  }'
}

# check_csv WHAT EXPECTED-FILE CSV-FILE NAME: the CSV rows of NAME match the
# expected lines: integers exactly, mean and std within 1e-9 relative.
check_csv() {
  if awk -v name="$4" '
    function close_to(a, b) { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
                              return d <= 1e-9 * (m > 1 ? m : 1) }
    NR == FNR { e[$1] = $0; next }
    FNR > 1 && $1 == name {
      rows++
      if (!($8 in e)) { print "no such channel " $8; bad = 1; next }
      split(e[$8], x, " ")
      got = $9 " " $10 " " $11 " " $12 " " $13 " " $14 " " $15 " " $16 " " $17
      want = x[2] " " x[3] " " x[4] " " x[5] " " x[6] " " x[7] " " x[8] " " x[9] " " x[10]
      if (got != want) { print $8 ": got " got ", want " want; bad = 1 }
      if (!close_to($18, x[11])) { print $8 ": mean " $18 ", want " x[11]; bad = 1 }
      if (x[12] == "null") { if ($19 != "") { print $8 ": std " $19 ", want empty"; bad = 1 } }
      else if (!close_to($19, x[12])) { print $8 ": std " $19 ", want " x[12]; bad = 1 }
    }
    END { n = 0; for (k in e) n++
          if (rows != n) { print "rows " rows ", want " n; bad = 1 }
          exit bad }' "$2" FS=, "$3" >"$tmp/why"; then
    pass
  else
    fail "$1: $(cat "$tmp/why")"
  fi
}

# check_json WHAT EXPECTED-FILE JSON-LINE-FILE: the integer fields appear
# exactly as expected; mean and std within 1e-9 relative.
check_json() {
  while read -r ch n mn mx mnx mny mxx mxy sum sumsq mean std; do
    frag="\"channel\":\"$ch\",\"count\":$n,\"min\":$mn,\"max\":$mx,\"min_x\":$mnx,\"min_y\":$mny,\"max_x\":$mxx,\"max_y\":$mxy,\"sum\":$sum,\"sum_sq\":$sumsq,\"mean\":"
    if ! grep -F -e "$frag" "$3" >/dev/null; then
      fail "$1: channel $ch: '$frag' not in $(cat "$3")"
      continue
    fi
    got=$(sed -e "s/.*\"channel\":\"$ch\",[^}]*\"mean\":\([^,]*\),\"std\":\([^,}]*\).*/\1 \2/" "$3")
    if echo "$got" | awk -v m="$mean" -v s="$std" '
      function close_to(a, b) { d = a - b; if (d < 0) d = -d; m2 = b < 0 ? -b : b
                                return d <= 1e-9 * (m2 > 1 ? m2 : 1) }
      { ok = close_to($1, m) && (s == "null" ? $2 == "null" : close_to($2, s))
        exit !ok }'; then
      pass
    else
      fail "$1: channel $ch: mean/std '$got', want $mean $std"
    fi
  done <"$2"
}

# ---- the images -------------------------------------------------------------

# 7x5 gray with ties: the first 0 at index 9 (2,1), the first 255 at 12 (5,1).
gray_vals=$(set_values "$(values 35 7 254)" 9=0 30=0 12=255 20=255)
pnm "$tmp/gray.pgm" 5 7 5 255 "$gray_vals"
expected 7 5 1 0 "$gray_vals" >"$tmp/gray.exp"
expected 7 5 1 1 "$gray_vals" >"$tmp/gray.exp1"

# 6x4 RGB.
rgb_vals=$(values 72 11 255)
pnm "$tmp/rgb.ppm" 6 6 4 255 "$rgb_vals"
expected 6 4 3 0 "$rgb_vals" >"$tmp/rgb.exp"

# 5x3 gray 16-bit with both extremes.
g16_vals=$(set_values "$(values 15 3 65535)" 4=65535 11=0)
pnm "$tmp/gray16.pgm" 5 5 3 65535 "$g16_vals"
expected 5 3 1 0 "$g16_vals" >"$tmp/gray16.exp"

# A constant image (std exactly 0) and a single pixel (no sample std).
const_vals=$(values 16 1 0 | awk '{ for (i = 1; i <= NF; i++) $i = 77; print }')
pnm "$tmp/const.pgm" 5 4 4 255 "$const_vals"
expected 4 4 1 0 "$const_vals" >"$tmp/const.exp"
pnm "$tmp/one.pgm" 5 1 1 255 "200"
expected 1 1 1 1 "200" >"$tmp/one.exp1"

# A 3x1 Radiance HDR (float RGB): (128,64,32,e=129) is (1, 0.5, 0.25) and
# (192,128,0,e=130) is (3, 2, 0) as m*2^(e-136); decoders that add half a
# mantissa step differ slightly, so these are compared loosely.
{
  printf '#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 3\n'
  printf '\200\100\040\201\300\200\000\202\000\000\000\000'
} >"$tmp/float.hdr"

# Names that need escaping, each a copy of gray.pgm.
q_name="$tmp/q\"uote\\back\\slash.pgm"
cp "$tmp/gray.pgm" "$q_name"
nl_name="$tmp/new
line	tab.pgm"
cp "$tmp/gray.pgm" "$nl_name"
bad_utf8_name="$tmp/bad$(printf '\377')utf8.pgm"
cp "$tmp/gray.pgm" "$bad_utf8_name"
csv_name="$tmp/c,\"q\".pgm"
cp "$tmp/gray.pgm" "$csv_name"
cp "$tmp/gray.pgm" "$tmp/-dash.pgm"

# Bad inputs.
: >"$tmp/empty.png"
mkdir "$tmp/dir.png"
echo "this is not an image" >"$tmp/text.png"
head -c 30 "$tmp/gray.pgm" >"$tmp/trunc.pgm"
missing="$tmp/missing.png"

# What --backend auto should pick here. Its cost rule keeps these small
# files on the CPU; IMGSTAT_AUTO=gpu makes the rule say the GPU always
# repays, so that the checks below see the GPU wherever one works (the rule
# itself is checked under "backends"): the GPU when this build has CUDA and
# a device works, else the CPU.
export IMGSTAT_AUTO=gpu
be=cpu
if "$IMGSTAT" --version | grep -F "CUDA backend: yes" >/dev/null &&
  "$IMGSTAT" --backend gpu -q "$tmp/gray.pgm" >/dev/null 2>&1; then
  be=gpu
fi
echo "cli_test: --backend auto is expected to use: $be"

# ---- text output ---------------------------------------------------------------

run "$tmp/gray.pgm"
expect_rc 0 "text"
expect_grep "$tmp/out" "$tmp/gray.pgm  7x5  Y  8-bit  backend=$be" "text header"
# The std column says which one it is: N here (--ddof 0).
if sed -n 2p "$tmp/out" | grep -E '^channel +min +max +mean +std \(N\) +min at +max at$' >/dev/null; then
  pass
else
  fail "text column header: $(sed -n 2p "$tmp/out")"
fi
read -r ch n mn mx mnx mny mxx mxy sum sumsq mean std <"$tmp/gray.exp"
# (the positions of the first min and max: the columns min at, max at)
if sed -n 3p "$tmp/out" | awk -v mn="$mn" -v mx="$mx" -v mean="$mean" -v std="$std" \
  -v mnat="$mnx,$mny" -v mxat="$mxx,$mxy" '
  { d1 = $4 - mean; d2 = $5 - std; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
    exit !($1 == "Y" && $2 == mn && $3 == mx && d1 <= 5e-5 && d2 <= 5e-5 &&
           $4 ~ /\.[0-9][0-9][0-9][0-9]$/ && $6 == mnat && $7 == mxat &&
           NF == 7) }'; then
  pass
else
  fail "text row: $(sed -n 3p "$tmp/out"), want Y $mn $mx $mean $std $mnx,$mny $mxx,$mxy"
fi

run "$tmp/rgb.ppm" "$tmp/gray16.pgm"
expect_rc 0 "text, two images"
expect_grep "$tmp/out" "$tmp/rgb.ppm  6x4  RGB  8-bit  backend=$be" "text RGB header"
expect_grep "$tmp/out" "$tmp/gray16.pgm  5x3  Y  16-bit  backend=$be" "text 16-bit header"

# ---- JSON and CSV values -------------------------------------------------------

run --json "$tmp/gray.pgm"
expect_rc 0 "json gray"
check_json "json gray" "$tmp/gray.exp" "$tmp/out"
expect_grep "$tmp/out" "{\"file\":\"$tmp/gray.pgm\",\"width\":7,\"height\":5,\"channels\":1,\"depth\":8,\"backend\":\"$be\",\"ddof\":0,\"stats\":[{" "json head"

run --json "$tmp/rgb.ppm"
expect_rc 0 "json rgb"
check_json "json rgb" "$tmp/rgb.exp" "$tmp/out"

run --json "$tmp/gray16.pgm"
expect_rc 0 "json 16-bit"
check_json "json 16-bit" "$tmp/gray16.exp" "$tmp/out"
expect_grep "$tmp/out" '"depth":16' "json 16-bit depth"

run --json "$tmp/const.pgm"
expect_rc 0 "json constant"
check_json "json constant" "$tmp/const.exp" "$tmp/out"
expect_grep "$tmp/out" '"std":0}' "json constant std 0"

run --json --ddof 1 "$tmp/gray.pgm"
expect_rc 0 "json ddof 1"
check_json "json ddof 1" "$tmp/gray.exp1" "$tmp/out"
expect_grep "$tmp/out" '"ddof":1' "json ddof 1 field"

run --json --ddof=1 "$tmp/one.pgm"
expect_rc 0 "json one pixel ddof 1"
check_json "json one pixel ddof 1" "$tmp/one.exp1" "$tmp/out"
expect_grep "$tmp/out" '"std":null' "one pixel ddof 1: std null"

run --csv "$tmp/gray.pgm" "$tmp/rgb.ppm" "$tmp/gray16.pgm"
expect_rc 0 "csv"
if [ "$(sed -n 1p "$tmp/out")" = "file,width,height,channels,depth,backend,ddof,channel,count,min,max,min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count,nodata_count,mask_pixels,label" ]; then
  pass
else
  fail "csv header: $(sed -n 1p "$tmp/out")"
fi
[ "$(lines "$tmp/out")" -eq 6 ] && pass || fail "csv: $(lines "$tmp/out") lines, want 1 + 1 + 3 + 1"
[ "$(grep -c '^file,' "$tmp/out")" -eq 1 ] && pass || fail "csv: header more than once"
check_csv "csv gray" "$tmp/gray.exp" "$tmp/out" "$tmp/gray.pgm"
check_csv "csv rgb" "$tmp/rgb.exp" "$tmp/out" "$tmp/rgb.ppm"
check_csv "csv 16-bit" "$tmp/gray16.exp" "$tmp/out" "$tmp/gray16.pgm"
if grep "^$tmp/rgb.ppm,6,4,3,8,$be,0,G," "$tmp/out" | grep ',0,0,,,$' >/dev/null; then
  pass
else
  fail "csv row layout: $(grep rgb.ppm "$tmp/out" | head -1)"
fi

run --csv "$csv_name"
expect_rc 0 "csv quoting"
expect_grep "$tmp/out" "\"$tmp/c,\"\"q\"\".pgm\",7,5,1,8,$be,0,Y," "csv RFC 4180 quoting"

# Threads do not change results.
run --json -j 1 "$tmp/rgb.ppm"
cp "$tmp/out" "$tmp/j1"
run --json -j2 "$tmp/rgb.ppm"
expect_rc 0 "-j2"
cmp -s "$tmp/out" "$tmp/j1" && pass || fail "-j 1 and -j2 differ"

# A file name starting with '-' after '--'.
run --json -- "$tmp/-dash.pgm"
expect_rc 0 "-- then a dash name"

# ---- float (HDR) -------------------------------------------------------------

run --json "$tmp/float.hdr"
expect_rc 0 "json float"
expect_grep "$tmp/out" '"width":3,"height":1,"channels":3,"depth":32' "float header"
if awk -v pat='"nan_count":0,"inf_count":0}' '{
  s = $0; while ((i = index(s, pat)) > 0) { n++; s = substr(s, i + 1) } }
  END { exit n != 3 }' "$tmp/out"; then
  pass
else
  fail "float: nan_count/inf_count not last in each stat: $(cat "$tmp/out")"
fi
if sed -e 's/.*"channel":"R","count":3,"min":\([^,]*\),"max":\([^,]*\),.*/\1 \2/' "$tmp/out" |
  awk '{ exit !($1 == 0 && $2 > 2.9 && $2 < 3.1) }'; then
  pass
else
  fail "float R min/max: $(cat "$tmp/out")"
fi
run "$tmp/float.hdr"
expect_rc 0 "text float"
expect_grep "$tmp/out" "$tmp/float.hdr  3x1  RGB  32-bit float  backend=$be" "text float header"

# ---- errors: bad inputs mixed with good ones -----------------------------------

run --json "$tmp/gray.pgm" "$missing" "$tmp/empty.png" "$tmp/dir.png" \
  "$tmp/text.png" "$tmp/trunc.pgm" "$tmp/rgb.ppm"
expect_rc 1 "mixed good and bad"
# dir.png is a directory: walked, it holds no image: an error
# in its place.
for f in "$missing" "$tmp/empty.png" "$tmp/dir.png" "$tmp/text.png" "$tmp/trunc.pgm"; do
  expect_grep "$tmp/err" "imgstat: $f: " "stderr names the bad file"
done
expect_grep "$tmp/err" "imgstat: $tmp/dir.png: no image files (0 other files skipped by extension)" \
  "an empty directory is named"
[ "$(tail -n 1 "$tmp/err")" = "imgstat: 5 of 7 inputs failed" ] && pass ||
  fail "mixed: last stderr line: $(tail -n 1 "$tmp/err")"
[ "$(lines "$tmp/out")" -eq 2 ] && pass || fail "mixed: $(lines "$tmp/out") records, want 2"
expect_grep "$tmp/out" "\"file\":\"$tmp/gray.pgm\"" "first good record printed"
expect_grep "$tmp/out" "\"file\":\"$tmp/rgb.ppm\"" "record after the bad ones printed"
[ "$(lines "$tmp/err")" -eq 6 ] && pass || fail "mixed: stderr should have 6 lines (5 errors, the summary): $(cat "$tmp/err")"
cp "$tmp/out" "$tmp/mixed.json"

if [ -n "$DATA" ] && [ -f "$DATA/pngsuite/xcrn0g04.png" ] && [ -f "$DATA/pngsuite/basn0g08.png" ]; then
  size=$(wc -c <"$DATA/pngsuite/basn0g08.png")
  head -c $((size / 2)) "$DATA/pngsuite/basn0g08.png" >"$tmp/trunc.png"
  run "$DATA/pngsuite/xcrn0g04.png" "$tmp/trunc.png" "$DATA/pngsuite/basn0g08.png"
  expect_rc 1 "corrupt and truncated PNG"
  expect_grep "$tmp/err" "imgstat: $DATA/pngsuite/xcrn0g04.png: " "corrupt PNG named"
  expect_grep "$tmp/err" "imgstat: $tmp/trunc.png: " "truncated PNG named"
  expect_grep "$tmp/out" "$DATA/pngsuite/basn0g08.png  32x32  Y  8-bit" "good PNG after bad ones"
else
  echo "skipped: corrupt PNG checks (no $DATA/pngsuite)"
fi

# A FITS header whose BLANK card holds a 53-digit integer, or 35
# bytes of 0xFF, overflowed a fixed buffer inside cfitsio (fortify aborted
# the run, the next input was lost). Each is refused naming the card and
# the file; the PNG after it is still printed.
# fits_card KEY VALUE: one 80-byte header card.
fits_card() { printf '%-80.80s' "$(printf '%-8s= %20s' "$1" "$2")"; }
# fits_blank FILE VALUE: a 4x3 16-bit image whose BLANK is VALUE.
fits_blank() {
  {
    fits_card SIMPLE T
    fits_card BITPIX 16
    fits_card NAXIS 2
    fits_card NAXIS1 4
    fits_card NAXIS2 3
    fits_card BLANK "$2"
    printf '%-80s' END
    printf '%*s' $((2880 - 7 * 80)) ''
    head -c 2880 /dev/zero
  } >"$1"
}
if "$IMGSTAT" --version | grep -F "FITS (cfitsio)" >/dev/null &&
  [ -n "$DATA" ] && [ -f "$DATA/pngsuite/basn0g08.png" ]; then
  fits_blank "$tmp/blank-digits.fits" "-9$(printf '%052d' 0 | tr 0 3)"
  fits_blank "$tmp/blank-ff.fits" "$(printf '%35s' '' | tr ' ' '\377')"
  for f in blank-digits blank-ff; do
    [ "$(wc -c <"$tmp/$f.fits")" -eq 5760 ] && pass ||
      fail "$f.fits: $(wc -c <"$tmp/$f.fits") bytes, want 5760"
    run "$tmp/$f.fits" "$DATA/pngsuite/basn0g08.png"
    expect_rc 1 "$f.fits then a PNG"
    expect_grep "$tmp/err" "imgstat: $tmp/$f.fits: Corrupt FITS data: card BLANK: value" "$f.fits refused naming the card"
    expect_grep "$tmp/out" "$DATA/pngsuite/basn0g08.png  32x32  Y  8-bit" "the PNG after $f.fits printed"
  done
else
  echo "skipped: FITS BLANK checks (no cfitsio or no $DATA/pngsuite)"
fi

run --max-pixels 34 "$tmp/gray.pgm"
expect_rc 1 "--max-pixels below the size"
expect_grep "$tmp/err" "max-pixels" "--max-pixels named in the message"
run --max-pixels 35 "$tmp/gray.pgm"
expect_rc 0 "--max-pixels at the size"

if [ -w /dev/full ]; then
  "$IMGSTAT" "$tmp/gray.pgm" >/dev/full 2>"$tmp/err"
  rc=$?
  expect_rc 1 "stdout is /dev/full"
  expect_grep "$tmp/err" "standard output" "write error message"
else
  echo "skipped: write error check (no /dev/full)"
fi

# ---- usage errors ----------------------------------------------------------------

for args in "--bogus $tmp/gray.pgm" "-x $tmp/gray.pgm" "--ddof 2 $tmp/gray.pgm" \
  "-j abc $tmp/gray.pgm" "-j -1 $tmp/gray.pgm" "--max-pixels 0 $tmp/gray.pgm" \
  "--max-pixels 12x $tmp/gray.pgm" "--backend fpga $tmp/gray.pgm" \
  "--kernel 8 $tmp/gray.pgm" "--kernel 0 $tmp/gray.pgm" "--json --csv $tmp/gray.pgm" \
  "--json=1 $tmp/gray.pgm" "$tmp/gray.pgm --backend" "" "--json" "-q"; do
  # shellcheck disable=SC2086 # split on purpose; no names with spaces here
  run $args
  expect_rc 2 "usage error '$args'"
  expect_grep "$tmp/err" "imgstat --help" "usage error '$args' hints at --help"
  [ -s "$tmp/out" ] && fail "usage error '$args' printed on stdout" || pass
done

# Numbers are strict everywhere (one parser): no spaces, no hex, no inf/nan;
# tiny values are numbers, and a value out of range says so.
for v in "0x10" " 5" "5 " "inf" "nan" "1e" "1,,2" "1,"; do
  run --percentiles "$v" "$tmp/gray.pgm"
  expect_rc 2 "--percentiles '$v'"
  expect_grep "$tmp/err" "is not up to" "--percentiles '$v': not a number"
done
run --percentiles 101 "$tmp/gray.pgm"
expect_rc 2 "--percentiles 101"
expect_grep "$tmp/err" "every value must be from 0 to 100" "--percentiles 101: range"
run --json --percentiles 1e-308,.5,99. "$tmp/gray.pgm"
expect_rc 0 "--percentiles with a subnormal, .5 and 99."
expect_grep "$tmp/out" '"percentiles":{"1e-308":' "--percentiles 1e-308 kept"

run --help
expect_rc 0 "--help"
expect_grep "$tmp/out" "Usage: imgstat" "--help text"
expect_grep "$tmp/out" "exactly, float mean and M2" "--help says --verify compares floats exactly"

run --version
expect_rc 0 "--version"
if grep -E '^imgstat [0-9]+\.[0-9]+\.[0-9]+ \(CUDA backend: (yes|no); JPEG: (TurboJPEG|stb_image)\)$' "$tmp/out" >/dev/null; then
  pass
else
  fail "--version: $(cat "$tmp/out")"
fi
cuda=no
grep -F "CUDA backend: yes" "$tmp/out" >/dev/null && cuda=yes

# ---- backends ------------------------------------------------------------------

run --json --backend cpu "$tmp/gray.pgm"
expect_rc 0 "--backend cpu"
expect_grep "$tmp/out" '"backend":"cpu"' "--backend cpu record"

run --json --backend gpu "$tmp/gray.pgm" "$tmp/rgb.ppm"
if [ "$cuda" = no ]; then
  expect_rc 1 "--backend gpu without CUDA"
  expect_grep "$tmp/err" "imgstat: $tmp/gray.pgm: --backend gpu needs a usable GPU: " "--backend gpu message"
  expect_grep "$tmp/err" "without CUDA" "--backend gpu says CUDA is missing"
  [ -s "$tmp/out" ] && fail "--backend gpu without CUDA printed a record" || pass
  gpu=no
elif [ "$rc" -eq 0 ]; then
  expect_grep "$tmp/out" '"backend":"gpu"' "--backend gpu record"
  check_json "gpu gray" "$tmp/gray.exp" "$tmp/out"
  gpu=yes
else
  expect_rc 1 "--backend gpu with no usable device"
  expect_grep "$tmp/err" "--backend gpu needs a usable GPU" "--backend gpu message"
  gpu=no
fi

run --json --backend auto "$tmp/gray.pgm"
expect_rc 0 "--backend auto"
if [ "$gpu" = yes ]; then want='"backend":"gpu"'; else want='"backend":"cpu"'; fi
[ "$gpu" = "$([ "$be" = gpu ] && echo yes || echo no)" ] && pass || fail "GPU probes disagree"
expect_grep "$tmp/out" "$want" "--backend auto picks $want"
[ "$gpu" = no ] && { [ -s "$tmp/err" ] && fail "--backend auto without a device warned: $(cat "$tmp/err")" || pass; }
# auto's own rule (no IMGSTAT_AUTO): one small image never repays CUDA, so
# auto computes it on the CPU, GPU or not; IMGSTAT_AUTO=cpu says the same.
for v in unset cpu; do
  if [ $v = unset ]; then
    env -u IMGSTAT_AUTO "$IMGSTAT" --json "$tmp/gray.pgm" >"$tmp/out" 2>"$tmp/err"
  else
    IMGSTAT_AUTO=cpu "$IMGSTAT" --json "$tmp/gray.pgm" >"$tmp/out" 2>"$tmp/err"
  fi
  rc=$?
  expect_rc 0 "auto's rule, IMGSTAT_AUTO $v"
  expect_grep "$tmp/out" '"backend":"cpu"' "auto's rule keeps one small image on the CPU (IMGSTAT_AUTO $v)"
done

run --verify "$tmp/gray.pgm" "$tmp/rgb.ppm" "$tmp/gray16.pgm" "$tmp/float.hdr"
if [ "$gpu" = no ]; then
  # Documented: --verify needs the GPU; without one every input fails (1).
  expect_rc 1 "--verify without a GPU"
  expect_grep "$tmp/err" "imgstat: $tmp/gray.pgm: --verify needs a usable GPU: " "--verify message"
else
  expect_rc 0 "--verify"
  [ "$(grep -c ': verify ok$' "$tmp/out")" -eq 4 ] && pass || fail "--verify: $(cat "$tmp/out")"
fi

# ---- JSON validity -------------------------------------------------------------

run --json "$tmp/gray.pgm" "$q_name" "$nl_name" "$bad_utf8_name" "$tmp/rgb.ppm" \
  "$tmp/gray16.pgm" "$tmp/const.pgm" "$tmp/float.hdr"
expect_rc 0 "json with awkward names"
[ "$(lines "$tmp/out")" -eq 8 ] && pass || fail "awkward names: $(lines "$tmp/out") lines, want 8"
cat "$tmp/out" "$tmp/mixed.json" >"$tmp/all.json"
run --json --ddof 1 "$tmp/one.pgm"
cat "$tmp/out" >>"$tmp/all.json"

if command -v python3 >/dev/null 2>&1; then
  while IFS= read -r line; do
    if printf '%s\n' "$line" | python3 -m json.tool >/dev/null 2>"$tmp/why"; then
      pass
    else
      fail "invalid JSON line: $line: $(cat "$tmp/why")"
    fi
  done <"$tmp/all.json"
  cat >"$tmp/check.py" <<'EOF'
import json, os, sys

KEYS = ["file", "width", "height", "channels", "depth", "backend", "ddof", "stats"]
STAT = ["channel", "count", "min", "max", "min_x", "min_y", "max_x", "max_y",
        "sum", "sum_sq", "mean", "std"]

def no_constant(name):
    raise ValueError("non-JSON number " + name)

files = []
with open(sys.argv[1], "rb") as f:
    for raw in f:
        text = raw.decode("utf-8")  # strict: the output must be UTF-8
        rec = json.loads(text, object_pairs_hook=lambda p: p,
                         parse_constant=no_constant)
        assert [k for k, _ in rec] == KEYS, [k for k, _ in rec]
        d = dict(rec)
        want = STAT + (["nan_count", "inf_count"] if d["depth"] == 32 else [])
        for s in d["stats"]:
            assert [k for k, _ in s] == want, [k for k, _ in s]
        files.append(d["file"])
names = [os.fsencode(a).decode("utf-8", "replace") for a in sys.argv[2:]]
assert files[:len(names)] == names, (files, names)
EOF
  if python3 "$tmp/check.py" "$tmp/all.json" "$tmp/gray.pgm" "$q_name" "$nl_name" \
    "$bad_utf8_name" >"$tmp/why" 2>&1; then
    pass
  else
    fail "JSON keys, order or file names: $(cat "$tmp/why")"
  fi
else
  echo "skipped: JSON validity checks (python3 not found)"
fi
expect_grep "$tmp/all.json" 'q\"uote\\back\\slash.pgm"' "quote and backslash escaped"
expect_grep "$tmp/all.json" 'new\nline\ttab.pgm"' "newline and tab escaped"
expect_grep "$tmp/all.json" 'bad\ufffdutf8.pgm"' "invalid UTF-8 replaced"
if grep -i -E 'nan[^_]|infinity' "$tmp/all.json" >/dev/null; then
  fail "NaN or Infinity token in JSON"
else
  pass
fi

# ---- input sources and --max-memory -------------------------------

# run_bounded ARGS...: run, killed after 20 s and with its address space
# capped where ulimit can: a loader that reads /dev/zero whole fails, it does
# not hang CI or take the machine's memory. The CPU backend keeps CUDA's
# address-space reservations out of it.
# Not under AddressSanitizer, whose shadow memory needs terabytes of address
# space.
asan_build=0
if ldd "$IMGSTAT" 2>/dev/null | grep -q libasan; then asan_build=1; fi
run_bounded() {
  (
    [ "$asan_build" = 1 ] || ulimit -v 4194304 2>/dev/null
    exec timeout 20 "$IMGSTAT" --backend cpu "$@"
  ) >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
head -c 100000 /dev/zero >"$tmp/zeros.bin"
if command -v timeout >/dev/null 2>&1; then
  run_bounded /dev/zero
  expect_rc 1 "/dev/zero"
  expect_grep "$tmp/err" "imgstat: /dev/zero: not a recognised image format" "/dev/zero refused"
  # Random first bytes start no image nearly always and are refused at once;
  # about once in 16000 runs they look like a signature (BM, P5, ...) and
  # the input is read up to --max-memory, which the address-space cap turns
  # into "out of memory": then one more try.
  for try in 1 2; do
    run_bounded /dev/urandom
    if [ "$rc" -ne 1 ] || grep -F -e "out of memory" "$tmp/err" >/dev/null; then
      continue
    fi
    break
  done
  expect_rc 1 "/dev/urandom"
  expect_grep "$tmp/err" "imgstat: /dev/urandom: " "/dev/urandom refused"
  expect_no_grep "$tmp/err" "out of memory" "/dev/urandom read until memory ran out"
  # The same first bytes in a regular file get the same message.
  run_bounded "$tmp/zeros.bin"
  expect_rc 1 "regular file of zeros"
  expect_grep "$tmp/err" "zeros.bin: not a recognised image format" "same message for a regular file"
else
  echo "skipped: /dev/zero and /dev/urandom checks (no timeout)"
fi

SAMPLES=${DATA:+$DATA/../../samples}
REF=${DATA:+$DATA/corpus_reference.tsv}
if [ -n "$DATA" ] && [ -f "$SAMPLES/camera.png" ] && [ -f "$SAMPLES/kodim23.png" ] && [ -f "$REF" ]; then
  # camera.png's sum from the independent reference (tests/tools/make_reference.py).
  cam_sum=$(awk -F '\t' '$1 == "photos/camera.png" { print $10 }' "$REF")
  # Through a pipe (/dev/stdin is then not a regular file) and a FIFO.
  cat "$SAMPLES/camera.png" | "$IMGSTAT" --backend cpu --json /dev/stdin >"$tmp/out" 2>"$tmp/err"
  rc=$?
  expect_rc 0 "PNG through a pipe"
  expect_grep "$tmp/out" "\"width\":512,\"height\":512,\"channels\":1,\"depth\":8," "pipe: size"
  expect_grep "$tmp/out" "\"sum\":$cam_sum," "pipe: sum matches the reference"
  if mkfifo "$tmp/fifo" 2>/dev/null; then
    cat "$SAMPLES/camera.png" >"$tmp/fifo" &
    run --backend cpu --json "$tmp/fifo"
    wait
    expect_rc 0 "PNG through a FIFO"
    expect_grep "$tmp/out" "\"sum\":$cam_sum," "FIFO: sum matches the reference"
  else
    echo "skipped: FIFO check (mkfifo failed)"
  fi
  # A pipe longer than --max-memory stops there.
  cat "$SAMPLES/kodim23.png" | "$IMGSTAT" --backend cpu --max-memory 100K /dev/stdin >"$tmp/out" 2>"$tmp/err"
  rc=$?
  expect_rc 1 "pipe over --max-memory"
  expect_grep "$tmp/err" "imgstat: /dev/stdin: input is larger than 102400 bytes without being a regular file (--max-memory)" "pipe over --max-memory: message"

  # kodim23.png (768x512 RGB) decodes to 1.1 MiB.
  run --backend cpu --max-memory 100K "$SAMPLES/kodim23.png"
  expect_rc 1 "--max-memory 100K"
  expect_grep "$tmp/err" "(--max-memory)" "--max-memory 100K: message names the option"
  expect_no_grep "$tmp/err" "see --max-pixels" "--max-memory refusal points at --max-pixels"
  for v in 10M 10m 10MiB 10485760 1G; do
    run --backend cpu --max-memory "$v" "$SAMPLES/kodim23.png"
    expect_rc 0 "--max-memory $v"
    expect_grep "$tmp/out" "768x512  RGB  8-bit" "--max-memory $v: decoded"
  done
  run --backend cpu --max-memory=10M "$SAMPLES/kodim23.png"
  expect_rc 0 "--max-memory=10M"
  run normalize --backend cpu --max-memory 100K "$SAMPLES/kodim23.png" -o "$tmp/norm.png"
  expect_rc 1 "normalize --max-memory 100K"
  expect_grep "$tmp/err" "(--max-memory)" "normalize --max-memory 100K: message"
  run normalize --backend cpu --max-memory 10M "$SAMPLES/kodim23.png" -o "$tmp/norm.png"
  expect_rc 0 "normalize --max-memory 10M"
  [ -s "$tmp/norm.png" ] && pass || fail "normalize --max-memory 10M: no output"
else
  echo "skipped: pipe, FIFO and --max-memory checks (no samples or reference)"
fi
for v in "" abc 0 0K -1 +5 1.5M 10MB "10 M" 10Mi K 1P 99999999999999999999 16777216T; do
  run --max-memory "$v" "$tmp/zeros.bin"
  expect_rc 2 "--max-memory '$v'"
  expect_grep "$tmp/err" "imgstat: --max-memory: '$v' is not a number of bytes" "--max-memory '$v': message"
  run normalize --max-memory "$v" "$tmp/zeros.bin" -o "$tmp/n.png"
  expect_rc 2 "normalize --max-memory '$v'"
done
run --max-memory
expect_rc 2 "--max-memory without a value"
# ---- --histogram-png never overwrites an input -------------------------------

"$IMGSTAT" normalize "$tmp/gray.pgm" -o "$tmp/h-rgb.png" 2>"$tmp/err" || fail "making h-rgb.png: $(cat "$tmp/err")"
cp "$tmp/h-rgb.png" "$tmp/h-rgb.orig"
run --histogram-png "$tmp/h.png" "$tmp/rgb.ppm" "$tmp/h-rgb.png"
expect_rc 2 "--histogram-png OUT-rgb.png is the second input"
expect_grep "$tmp/err" "the output '$tmp/h-rgb.png' is the input '$tmp/h-rgb.png'" "--histogram-png: message"
cmp -s "$tmp/h-rgb.png" "$tmp/h-rgb.orig" && pass || fail "--histogram-png overwrote an input"
[ -e "$tmp/h-h-rgb.png" ] && fail "--histogram-png wrote before refusing" || pass
rm -f "$tmp/h-rgb.png" "$tmp/h-rgb.orig"
# plots are named after their inputs; the dataset's is OUT-dataset.png
run --histogram-png "$tmp/p.png" --dataset "$tmp/rgb.ppm" "$tmp/gray.pgm"
expect_rc 0 "--histogram-png with --dataset"
for f in p-rgb.png p-gray.png p-dataset.png; do
  if [ "$(head -c 8 "$tmp/$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then pass; else
    fail "--histogram-png: $f not written"; fi
done
[ -e "$tmp/p-1.png" ] && fail "--histogram-png: a plot numbered by position" || pass
run --histogram-png "$tmp/q.png" --dataset-only "$tmp/rgb.ppm" "$tmp/rgb.ppm"
expect_rc 0 "--histogram-png with --dataset-only"
[ -e "$tmp/q.png" ] && pass || fail "--dataset-only: the dataset's plot is OUT itself"
rm -f "$tmp"/p-*.png "$tmp/q.png"
# --report: one HTML page, written atomically, never over an input (the
# page's content: tests/report/)
run --dataset --report "$tmp/r.html" "$tmp/rgb.ppm" "$tmp/gray.pgm"
expect_rc 0 "--report with --dataset"
[ "$(head -c 15 "$tmp/r.html" 2>/dev/null)" = "<!DOCTYPE html>" ] && pass || fail "--report: no page"
ls -a "$tmp" | grep -q '^\.r\.html' && fail "--report left its temporary" || pass
run --report "$tmp/r.html" "$tmp/rgb.ppm"
expect_rc 0 "--report without --dataset"
cp "$tmp/gray.pgm" "$tmp/gray.orig"
run --report "$tmp/gray.pgm" "$tmp/gray.pgm"
expect_rc 2 "--report over its input"
cmp -s "$tmp/gray.pgm" "$tmp/gray.orig" && pass || fail "--report overwrote an input"
rm -f "$tmp/r.html" "$tmp/gray.orig"
run --histogram-png "$tmp/h.jpg" "$tmp/gray.pgm"
expect_rc 2 "--histogram-png to a name without .png"
expect_grep "$tmp/err" "is not a name ending in .png" "--histogram-png .jpg: message"
ln "$tmp/gray.pgm" "$tmp/hard.png"
run --histogram-png "$tmp/hard.png" "$tmp/gray.pgm"
expect_rc 2 "--histogram-png is a hard link to the input"
run --histogram-png "$tmp/./gray.pgm" "$tmp/gray.pgm"
expect_rc 2 "--histogram-png names the input by another spelling"
cmp -s "$tmp/gray.pgm" "$tmp/hard.png" && pass || fail "an input changed"
run --histogram-png "$tmp/h-2.png" "$tmp/gray.pgm"
expect_rc 0 "--histogram-png to a new file"
if [ "$(head -c 8 "$tmp/h-2.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then pass; else
  fail "--histogram-png: no PNG written"; fi
rm -f "$tmp/h-2.png" "$tmp/hard.png"
# Inputs found by a folder walk or in a --files-from list are inputs too:
# the plot of the dataset, or of one image, never replaces one.
mkdir -p "$tmp/hw"
"$IMGSTAT" normalize "$tmp/gray.pgm" -o "$tmp/hw/a.png" 2>"$tmp/err" || fail "making a.png: $(cat "$tmp/err")"
cp "$tmp/rgb.ppm" "$tmp/hw/c.ppm"
cp "$tmp/hw/a.png" "$tmp/hw/h-c.png"
cksum "$tmp/hw"/* >"$tmp/hw.sums"
(cd "$tmp/hw" && "$IMGSTAT" --dataset-only --histogram-png a.png . >"$tmp/out" 2>"$tmp/err")
rc=$?
expect_rc 2 "--dataset-only --histogram-png a.png . (a.png found by the walk)"
expect_grep "$tmp/err" "the output 'a.png' is the input './a.png': refusing to overwrite an input" \
  "walk: the input named"
(cd "$tmp/hw" && "$IMGSTAT" --histogram-png h.png . >"$tmp/out" 2>"$tmp/err")
rc=$?
expect_rc 2 "--histogram-png h.png . (the plot of c.ppm is the input h-c.png)"
expect_grep "$tmp/err" "the output 'h-c.png' is the input './h-c.png'" "walk: per-image plot named"
printf '%s\n' "$tmp/hw/c.ppm" "$tmp/hw/h-c.png" >"$tmp/hw.list"
run --histogram-png "$tmp/hw/h.png" --files-from "$tmp/hw.list"
expect_rc 2 "--histogram-png over a --files-from list"
ln -s "$tmp/hw/a.png" "$tmp/hw-link.png"
printf '%s\n' "$tmp/hw-link.png" >"$tmp/hw.list"
run --dataset-only --histogram-png "$tmp/hw/a.png" --files-from "$tmp/hw.list"
expect_rc 2 "--histogram-png is the target of a listed symbolic link"
cksum "$tmp/hw"/* | cmp -s - "$tmp/hw.sums" && pass || fail "--histogram-png changed an input"
[ -e "$tmp/hw/h-dataset.png" ] || [ -e "$tmp/hw/h.png" ] &&
  fail "--histogram-png wrote before refusing" || pass
rm -rf "$tmp/hw" "$tmp/hw.sums" "$tmp/hw.list" "$tmp/hw-link.png"

# ---- control characters in names never reach the terminal raw -----------------

esc=$(printf '\033')
bel=$(printf '\007')
esc_name="$tmp/t$esc]0;pwned$bel.pgm"
cp "$tmp/gray.pgm" "$esc_name"
# no_raw FILE WHAT: FILE holds neither ESC nor BEL (nor the C1 CSI).
no_raw() {
  if grep -q -e "$esc" -e "$bel" -e "$(printf '\302\233')" "$1"; then
    fail "$2: a control character reached the output raw: $(od -c "$1" | head -5)"
  else
    pass
  fi
}
run "$esc_name" "$tmp/t$(printf '\302\233')2J.pgm"
expect_rc 1 "text output of an escaped name, and a missing one"
no_raw "$tmp/out" "text output"
no_raw "$tmp/err" "message naming a missing file"
expect_grep "$tmp/out" "$tmp/t\\x1b]0;pwned\\x07.pgm  7x5  Y  8-bit" "text: name escaped"
expect_grep "$tmp/err" "imgstat: $tmp/t\\xc2\\x9b2J.pgm: " "stderr: name escaped"
run --csv "$esc_name" "$nl_name"
expect_rc 0 "CSV of escaped names"
no_raw "$tmp/out" "CSV output"
expect_grep "$tmp/out" "$tmp/t\\x1b]0;pwned\\x07.pgm,7,5,1,8," "CSV: name escaped"
expect_grep "$tmp/out" "$tmp/new\\nline\\ttab.pgm,7,5,1,8," "CSV: line break escaped"
[ "$(lines "$tmp/out")" -eq 3 ] && pass || fail "CSV of escaped names: $(lines "$tmp/out") lines, want 3"
run --percentiles "1$esc" "$tmp/gray.pgm"
expect_rc 2 "usage error with ESC in a value"
no_raw "$tmp/err" "usage error message"
expect_grep "$tmp/err" "'1\\x1b'" "usage error: value escaped"
run "--bogus$bel" "$tmp/gray.pgm"
expect_rc 2 "unknown option with BEL"
no_raw "$tmp/err" "unknown option message"
run "$tmp/a\\x1b.pgm"
expect_rc 1 "a missing name with a backslash"
expect_grep "$tmp/err" "a\\\\x1b.pgm" "a backslash in a name is doubled"

echo "cli_test: $checks checks passed, $failures failed"
[ "$failures" -eq 0 ]
