#!/usr/bin/env bash
# summarize.sh OUTDIR: the summary of a batch job from the rows its models
# wrote (compress-one.sh): OUTDIR/summary.json (an array of rows) and
# OUTDIR/summary.csv (model, status, exit code, recipe, file bytes, dense
# fp32 bytes, ratio, accuracy after import, prune, quantize and encode,
# seconds), models in name order. Prints the CSV; exits 1 when a model
# failed or none is there.
set -u
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 1; }
out=$1
command -v jq > /dev/null || { echo "$0: jq is needed (Debian: jq)" >&2; exit 1; }
shopt -s nullglob
rows=("$out"/*.row.json)
[ ${#rows[@]} -gt 0 ] || { echo "$0: no model rows in $out" >&2; exit 1; }
jq -s 'sort_by(.model)' "${rows[@]}" > "$out/summary.json.tmp" && mv "$out/summary.json.tmp" "$out/summary.json" || exit 1
jq -r '["model","status","exit_code","recipe","file_bytes","dense_fp32_bytes","ratio",
        "accuracy_input","accuracy_prune","accuracy_quantize","accuracy_encode","seconds"],
       (.[] | [.model, .status, .exit_code, .recipe, .file_bytes, .dense_fp32_bytes, .ratio,
               .accuracy.input, .accuracy.prune, .accuracy.quantize, .accuracy.encode, .seconds]) | @csv' \
    "$out/summary.json" > "$out/summary.csv.tmp" && mv "$out/summary.csv.tmp" "$out/summary.csv" || exit 1
cat "$out/summary.csv"
[ "$(jq '[.[] | select(.status != "ok")] | length' "$out/summary.json")" -eq 0 ]
