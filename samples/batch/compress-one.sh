#!/usr/bin/env bash
# compress-one.sh MODEL.onnx DATA OUTDIR: one model of a batch job.
#
# Imports MODEL.onnx, compresses it with MODEL.recipe when one lies beside
# it (else with the recipe in $DCZ_RECIPE, else with dcz's defaults) and
# writes into OUTDIR:
#   NAME.dcz         the compressed model
#   NAME.row.json    its summary row: model, status, sizes, ratio, the
#                    accuracy after every stage, seconds
#   NAME.log         dcz's messages
# A failed model gets a row with its status and exit code, and the script
# exits with that code; the other models of the batch go on.
#
# Environment: DCZ (the dcz command; default: dcz on PATH, else this
# checkout's bin/dcz), DCZ_RECIPE, DCZ_OPTS (more options for compress,
# e.g. "--threads 1").
# Used by compress-all.sh (GNU parallel) and compress-array.slurm (Slurm).
set -u
[ $# -eq 3 ] || { echo "usage: $0 MODEL.onnx DATA OUTDIR" >&2; exit 1; }
model=$1 data=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
dcz=${DCZ:-$(command -v dcz || echo "$here/../../bin/dcz")}
command -v jq > /dev/null || { echo "$0: jq is needed for the summary rows (Debian: jq)" >&2; exit 1; }
name=$(basename "$model" .onnx)
recipe=${model%.onnx}.recipe
[ -f "$recipe" ] || recipe=${DCZ_RECIPE:-}
mkdir -p "$out" || exit 1
log=$out/$name.log row=$out/$name.row.json
t0=$(date +%s.%N)

# row STATUS CODE [COMPRESS_JSON]: the summary row, from compress's --json
row() {
    local secs; secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    if [ -n "${3:-}" ]; then
        jq -c --arg m "$name" --arg r "${recipe:-defaults}" --argjson s "$secs" \
            '{model: $m, status: "ok", exit_code: 0, recipe: $r, file_bytes, dense_fp32_bytes, ratio,
              accuracy: (reduce .stages[] as $x ({}; .[$x.stage] = $x.accuracy)), seconds: $s}' "$3"
    else
        jq -nc --arg m "$name" --arg st "$1" --argjson c "$2" --arg r "${recipe:-defaults}" --argjson s "$secs" \
            '{model: $m, status: $st, exit_code: $c, recipe: $r, seconds: $s}'
    fi > "$row.tmp" && mv "$row.tmp" "$row"
}

"$dcz" import "$model" -q -o "$out/$name.in.dcz" 2> "$log"
rc=$?
if [ $rc -ne 0 ]; then row "import failed" $rc; cat "$log" >&2; exit $rc; fi
args=(compress "$out/$name.in.dcz" --data "$data" --json -q -o "$out/$name.dcz")
[ -n "$recipe" ] && args+=(--recipe "$recipe")
# shellcheck disable=SC2206  # DCZ_OPTS is a list of options
args+=(${DCZ_OPTS:-})
"$dcz" "${args[@]}" > "$out/$name.compress.json" 2>> "$log"
rc=$?
rm -f "$out/$name.in.dcz"
if [ $rc -ne 0 ]; then row "compress failed" $rc; cat "$log" >&2; exit $rc; fi
row ok 0 "$out/$name.compress.json"
rm -f "$out/$name.compress.json"
