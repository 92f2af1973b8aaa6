#!/usr/bin/env bash
# Byte-for-byte comparison of two imgstat builds (a restructuring keeps
# every output as it was).
#
#   tests/tools/compare_builds.sh OLD_IMGSTAT NEW_IMGSTAT [CORPUS_DIR]
#
# Runs both programs, with --backend cpu (no GPU involved), over every image in
# samples/, CORPUS_DIR/{photos,hdr,pngsuite} (default ../shared/corpus beside
# the checkout) and tests/data/{pngsuite,formats}: the statistics as text,
# --json and --csv, with --histogram --percentiles 1,50,99, with --bins 64,
# --histogram-png, --brief, --errors-as-records, --files-from, the dataset
# record (--dataset, --dataset-only, --as, --scale, its float range pass and
# plot); `normalize` in every mode (minmax, clip, zscore, --mean/--std
# given and measured, --stats-from; --linked, --alpha, --depth, --format) into
# .png, .npy and .pfm; the same over each folder at once (several records,
# OUT-N.png, normalize into a folder); and the help, version and a few usage
# errors. A case is identical when its stdout, its stderr (each program's
# path replaced by IMGSTAT, the folder of the documents --help names by
# DOCS/, normalize's run time on its summary line by T), its exit status and
# the files it wrote (names, permission bits and bytes) are. An input whose bytes are those of an earlier
# one is run once (tests/data/pngsuite is the corpus's PngSuite); set
# COMPARE_ALL=1 to run every copy, COMPARE_FOLDERS="DIR ..." to take the
# images of those folders instead (a quick run).
#
# Prints each differing case with the start of its differences, then
#   compare_builds: N identical, M different
# and exits 0 when M is 0, 1 otherwise (2: usage). The cases that differ are
# kept in a folder it names; the rest is removed.
set -u

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 OLD_IMGSTAT NEW_IMGSTAT [CORPUS_DIR]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
old=$(realpath "$1") && new=$(realpath "$2") || exit 2
corpus=${3:-$root/../shared/corpus}
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "compare_builds: $b is not an executable" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "compare_builds: needs jq" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/compare_builds.XXXXXX") || exit 2
keep=$work/differences
mkdir -p "$keep"
trap '[ -d "$work" ] && find "$work" -mindepth 1 -maxdepth 1 ! -name differences -exec rm -rf {} +' EXIT

# ---- the inputs --------------------------------------------------------------
inputs=()
declare -A seen=()
skipped=0
add_folder() { # DIR: its image files (not licences, READMEs, tables)
  local f sum
  [ -d "$1" ] || { echo "compare_builds: no folder $1 (skipped)" >&2; return; }
  for f in "$1"/*; do
    [ -f "$f" ] || continue
    case ${f##*/} in
    *.txt | *.md | *.tsv | *.LICENSE | *.README | LICENSE* | README*) continue ;;
    esac
    f=$(realpath "$f")
    sum=$(cksum <"$f")
    if [ -n "${seen[$sum]:-}" ] && [ "${COMPARE_ALL:-0}" != 1 ]; then
      skipped=$((skipped + 1))
      continue
    fi
    seen[$sum]=$f
    inputs+=("$f")
  done
}
folders=("$root/samples" "$corpus/photos" "$corpus/hdr" "$corpus/pngsuite"
  "$root/tests/data/pngsuite" "$root/tests/data/formats")
if [ -n "${COMPARE_FOLDERS:-}" ]; then
  read -r -a folders <<<"$COMPARE_FOLDERS"
fi
for d in "${folders[@]}"; do add_folder "$d"; done
[ ${#inputs[@]} -gt 0 ] || { echo "compare_builds: no inputs" >&2; exit 2; }

# ---- running a case ----------------------------------------------------------
# A case runs in its own empty folder (with an empty subfolder dir/ for
# outputs into a folder), so the files it writes are named alike for both.
ncase=0
same=0
differ=0
group=""   # the folder of the current group of cases
cases=()   # the current group's case descriptions

run_in() { # BIN DIR ARGS...
  local bin=$1 dir=$2
  shift 2
  mkdir -p "$dir/cwd/dir"
  (cd "$dir/cwd" && exec "$bin" "$@" </dev/null >"$dir/stdout" 2>"$dir/stderr")
  echo $? >"$dir/status"
}

case_() { # ARGS...: one case, run by both programs
  ncase=$((ncase + 1))
  local id=c$ncase
  run_in "$old" "$group/old/$id" "$@"
  run_in "$new" "$group/new/$id" "$@"
  printf '%s\n' "$*" >"$group/$id.cmd"
  cases+=("$id")
}

report() { # ID: prints how case ID differs and keeps it
  local id=$1 o=$group/old/$1 n=$group/new/$1
  differ=$((differ + 1))
  echo "DIFFERENT: imgstat $(cat "$group/$id.cmd")"
  cmp -s "$o/status" "$n/status" ||
    echo "  exit status $(cat "$o/status") -> $(cat "$n/status")"
  local stream
  for stream in stdout stderr; do
    cmp -s "$o/$stream" "$n/$stream" ||
      { echo "  $stream:"; diff -u "$o/$stream" "$n/$stream" | sed -n '3,10s/^/    /p'; }
  done
  diff -rq "$o/cwd" "$n/cwd" 2>&1 | sed -n '1,4s/^/  /p'
  diff <(listing "$o") <(listing "$n") | sed -n '1,4s/^/  files: /p'
  mkdir -p "$keep/$id"
  cp "$group/$id.cmd" "$keep/$id/cmd"
  cp -r "$o" "$keep/$id/old"
  cp -r "$n" "$keep/$id/new"
}

listing() { # DIR: names, types and permission bits of what was written
  (cd "$1" && find . -mindepth 1 -printf '%P %y %m\n' | LC_ALL=C sort)
}

check_group() { # compares the group's cases, then removes them
  local side bin id
  for side in old new; do
    [ $side = old ] && bin=$old || bin=$new
    # the program's path; the documents --help names by the source folder
    # each was built in; normalize's run time on its summary line
    find "$group/$side" -name stdout -o -name stderr |
      BIN=$bin xargs -r perl -pi -e 's/\Q$ENV{BIN}\E/IMGSTAT/g;
        s{(?<=[ (])/[^ ()]*/docs/}{DOCS/}g;
        s/^(imgstat: [0-9]+ written to .*), [0-9.]+ s$/$1, T s/'
  done
  # The cases with any difference: contents (diff -r), or names, types and
  # permission bits (the listings).
  local -A bad=()
  while read -r id; do
    [ -n "$id" ] && bad[$id]=1
  done < <(
    {
      diff -rq "$group/old" "$group/new" 2>&1
      diff <(listing "$group/old") <(listing "$group/new")
    } | grep -oE '(^|[ /])c[0-9]+/' | tr -d ' /' | sort -u)
  for id in "${cases[@]}"; do
    if [ -n "${bad[$id]:-}" ]; then
      report "$id"
    else
      same=$((same + 1))
    fi
  done
  rm -rf "$group"
  cases=()
}

new_group() {
  group=$work/g
  rm -rf "$group"
  mkdir -p "$group"
}

# ---- one image ---------------------------------------------------------------
cpu=(--backend cpu)
per_image() { # FILE
  local f=$1 rec=$work/record.json mean std
  new_group
  case_ "${cpu[@]}" "$f"
  case_ "${cpu[@]}" --json "$f"
  case_ "${cpu[@]}" --csv "$f"
  case_ "${cpu[@]}" --json --ddof 1 "$f"
  case_ "${cpu[@]}" --histogram --percentiles 1,50,99 "$f"
  case_ "${cpu[@]}" --histogram --percentiles 1,50,99 --json "$f"
  case_ "${cpu[@]}" --histogram --percentiles 1,50,99 --csv "$f"
  case_ "${cpu[@]}" --histogram --json --bins 64 "$f"
  case_ "${cpu[@]}" --histogram-png h.png "$f"
  case_ "${cpu[@]}" --histogram-png h.png --bins 64 --histogram-log "$f"

  local n=(normalize "${cpu[@]}")
  case_ "${n[@]}" "$f" -o out.png
  case_ "${n[@]}" minmax "$f" -o out.npy
  case_ "${n[@]}" "$f" -o out.pfm
  case_ "${n[@]}" --depth 8 "$f" -o out.png
  case_ "${n[@]}" --depth 16 "$f" -o out.png
  case_ "${n[@]}" --depth 32 "$f" -o out.npy
  case_ "${n[@]}" --format pfm "$f" -o out.data
  case_ "${n[@]}" --linked "$f" -o out.png
  case_ "${n[@]}" --per-channel --depth 32 "$f" -o out.pfm
  case_ "${n[@]}" clip 1,99 "$f" -o out.png
  case_ "${n[@]}" clip 1,99 "$f" -o out.npy
  case_ "${n[@]}" clip 1,99 "$f" -o out.pfm
  case_ "${n[@]}" clip 2,98 --linked "$f" -o out.png
  case_ "${n[@]}" clip 0.5,99.5 --bins 1024 --depth 32 "$f" -o out.npy
  case_ "${n[@]}" zscore "$f" -o out.npy
  case_ "${n[@]}" zscore "$f" -o out.pfm
  case_ "${n[@]}" --mean 100 --std 50 "$f" -o out.npy
  case_ "${n[@]}" --mean 10,20,30 --std 5,6,7 "$f" -o out.pfm
  case_ "${n[@]}" --alpha normalize "$f" -o out.png
  case_ "${n[@]}" --alpha drop "$f" -o out.png
  case_ "${n[@]}" --alpha drop "$f" -o out.npy
  case_ "${n[@]}" --alpha copy --depth 16 "$f" -o out.png
  # The measured statistics (the old program's record, the same for both).
  "$old" "${cpu[@]}" --json "$f" 2>/dev/null | head -n 1 >"$rec"
  case_ "${n[@]}" --stats-from "$rec" "$f" -o out.pfm
  case_ "${n[@]}" --stats-from "$rec" "$f" -o out.npy
  mean=$(jq -r '[.stats[].mean] | if all(. != null) then map(tostring) | join(",") else "" end' "$rec" 2>/dev/null)
  std=$(jq -r '[.stats[].std] | if all(. != null and . > 0) then map(tostring) | join(",") else "" end' "$rec" 2>/dev/null)
  if [ -n "$mean" ] && [ -n "$std" ]; then
    case_ "${n[@]}" --mean "$mean" --std "$std" "$f" -o out.npy
  fi
  check_group
}

# ---- several inputs at once, and the command line itself -------------------
per_folder() { # DIR FILES...
  local d=$1
  shift
  new_group
  case_ "${cpu[@]}" "$@"
  case_ "${cpu[@]}" --json "$@"
  case_ "${cpu[@]}" --csv --ddof 1 "$@"
  case_ "${cpu[@]}" --histogram --json "$@"
  case_ "${cpu[@]}" --histogram-png h "$@"
  case_ "${cpu[@]}" --brief "$@"
  case_ "${cpu[@]}" -j 1 --json "$@"
  # the folder walked, a list, failures in their places
  case_ "${cpu[@]}" "$d"
  case_ "${cpu[@]}" --json --errors-as-records "$d" "$work/no such file.png"
  case_ "${cpu[@]}" --csv --errors-as-records "$@" "$work/no such file.png"
  printf '%s\n' "$@" >"$work/list.txt"
  case_ "${cpu[@]}" --json --files-from "$work/list.txt"
  # the dataset record in every format, its layouts and scales, the float
  # range pass (--histogram without --range), its plot
  case_ "${cpu[@]}" --dataset "$@"
  case_ "${cpu[@]}" --dataset --json "$@"
  case_ "${cpu[@]}" --dataset --csv --errors-as-records "$@" "$work/no such file.png"
  case_ "${cpu[@]}" --dataset-only --scale unit "$@"
  case_ "${cpu[@]}" --dataset-only --as gray --json --ddof 1 "$@"
  case_ "${cpu[@]}" --dataset-only --as rgba --csv "$@"
  case_ "${cpu[@]}" --dataset --histogram --json "$@"
  case_ "${cpu[@]}" --dataset-only --histogram --range 0,1 --csv "$@"
  case_ "${cpu[@]}" --dataset-only --histogram-png hd.png "$@"
  case_ normalize "${cpu[@]}" "$@" -o dir
  case_ normalize "${cpu[@]}" clip 1,99 --depth 16 "$@" -o dir
  case_ normalize "${cpu[@]}" zscore "$@" -o dir
  check_group
  echo "compare_builds: $d: $same identical, $differ different so far" >&2
}

command_line() {
  local f=${inputs[0]}
  new_group
  case_ --help
  case_ --version
  case_ normalize --help
  case_
  case_ --frobnicate "$f"
  case_ --backend cpu --ddof 2 "$f"
  case_ --backend cpu --percentiles 1,x "$f"
  case_ --backend cpu --bins 0 --histogram "$f"
  case_ --backend cpu "$work/no such file.png" "$f" "$root/samples/README.md"
  case_ --backend cpu --histogram-png "$f" "$f"
  case_ normalize --backend cpu "$f"
  case_ normalize --backend cpu zscore --depth 8 "$f" -o out.png
  case_ normalize --backend cpu clip 99,1 "$f" -o out.png
  case_ normalize --backend cpu --std 0 --mean 1 "$f" -o out.npy
  case_ normalize --backend cpu "$f" -o "$f"
  case_ normalize --backend cpu "$f" "$f" -o out.png
  case_ normalize --backend cpu "$f" -o out.jpeg
  check_group
}

command_line
for f in "${inputs[@]}"; do per_image "$f"; done
for d in "${folders[@]}"; do
  files=()
  for f in "${inputs[@]}"; do
    [ "${f%/*}" = "$(realpath "$d" 2>/dev/null)" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] && per_folder "$d" "${files[@]}"
done

echo "compare_builds: ${#inputs[@]} inputs ($skipped byte-identical copies run once), $ncase cases"
if [ "$differ" -gt 0 ]; then
  echo "compare_builds: the differing cases are kept in $keep"
else
  rm -rf "$work"
fi
echo "compare_builds: $same identical, $differ different"
[ "$differ" -eq 0 ]
