#!/usr/bin/env bash
# compress-all.sh MODELS DATA OUTDIR [JOBS]: compresses every MODELS/*.onnx
# on this machine, JOBS at a time (default: the number of cores), with GNU
# parallel, then writes OUTDIR/summary.csv and OUTDIR/summary.json
# (summarize.sh). A model with MODELS/NAME.recipe beside it uses that
# recipe; the others $DCZ_RECIPE or dcz's defaults (compress-one.sh). Each
# model's dcz runs with --threads 1 unless DCZ_OPTS says otherwise, so that
# JOBS models share the cores. Exits 1 when a model failed (its row says
# why; parallel's log is OUTDIR/parallel.log).
set -u
[ $# -ge 3 ] && [ $# -le 4 ] || { echo "usage: $0 MODELS DATA OUTDIR [JOBS]" >&2; exit 1; }
models=$1 data=$2 out=$3 jobs=${4:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
command -v parallel > /dev/null || { echo "$0: GNU parallel is needed (Debian: parallel)" >&2; exit 1; }
shopt -s nullglob
files=("$models"/*.onnx)
[ ${#files[@]} -gt 0 ] || { echo "$0: no .onnx model in $models" >&2; exit 1; }
mkdir -p "$out" || exit 1
export DCZ_OPTS=${DCZ_OPTS:---threads 1}
parallel --will-cite --jobs "$jobs" --joblog "$out/parallel.log" \
    bash "$here/compress-one.sh" {} "$data" "$out" ::: "${files[@]}"
bash "$here/summarize.sh" "$out"
