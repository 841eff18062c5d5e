#!/usr/bin/env bash
# The batch samples (samples/batch/) end to end on a folder of three ONNX
# models, one with a recipe beside it and one that is not a model: the
# Slurm array script run as its three tasks would be, then the summary
# (CSV and JSON: a row per model, the failed one with its status); then
# compress-all.sh with GNU parallel (SKIP without it).
source "$(dirname "$0")/lib.bash"
B="$ROOT/samples/batch"
D=fashion-mnist
export DCZ="$DCZ"
M="$T/models"; mkdir -p "$M"
for a in mlp:784-16-10 mlp:784-24-10 cnn:c4k3-p2-f10; do
    n=$(echo "$a" | tr ':-' '__')
    "$DCZ" train --arch $a --epochs 1 --data $D --validation 56000 --threads 1 -q -o "$T/$n.dcz" || fail "train $a"
    "$DCZ" export "$T/$n.dcz" -q -o "$M/$n.onnx" || fail "export $a"
done
printf '[compress]\nsparsity = 0.5\nbits = 4\n' > "$M/mlp_784_24_10.recipe"
echo "not a model" > "$M/zz_broken.onnx"
export DCZ_OPTS="--validation 56000 --rounds 1 --prune-epochs 1 --final-epochs 0 --quant-epochs 1 --threads 1"

# the Slurm array: tasks 0 to 3 (no sbatch needed to run a task's script)
for i in 0 1 2 3; do
    SLURM_ARRAY_TASK_ID=$i bash "$B/compress-array.slurm" "$M" $D "$T/out" > "$T/task$i.log" 2>&1
    rc=$?
    if [ $i -lt 3 ]; then [ $rc -eq 0 ] || { cat "$T/task$i.log"; fail "task $i: exit $rc"; }
    else [ $rc -eq 2 ] || { cat "$T/task$i.log"; fail "the broken model: exit $rc, expected 2"; }; fi
done
SLURM_ARRAY_TASK_ID=4 bash "$B/compress-array.slurm" "$M" $D "$T/out" > /dev/null 2>&1 && fail "task 4 of 4 models ran"
bash "$B/summarize.sh" "$T/out" > "$T/csv" && fail "summary of a batch with a failed model exits 0"
[ "$(wc -l < "$T/out/summary.csv")" -eq 5 ] || fail "summary.csv: $(cat "$T/out/summary.csv")"
head -n 1 "$T/out/summary.csv" | grep -q '^"model","status","exit_code","recipe","file_bytes","dense_fp32_bytes","ratio","accuracy_input","accuracy_prune","accuracy_quantize","accuracy_encode","seconds"$' ||
    fail "CSV header: $(head -n 1 "$T/out/summary.csv")"
jq -e 'length == 4 and ([.[] | select(.status == "ok")] | length) == 3' "$T/out/summary.json" > /dev/null ||
    fail "summary.json: $(cat "$T/out/summary.json")"
jq -e '.[] | select(.model == "zz_broken") | .status == "import failed" and .exit_code == 2' "$T/out/summary.json" \
    > /dev/null || fail "the broken model's row"
jq -e '.[] | select(.model == "mlp_784_24_10") | .recipe | endswith(".recipe")' "$T/out/summary.json" > /dev/null ||
    fail "the recipe beside a model was not used"
# each row agrees with the file it names, measured again by dcz
for n in mlp_784_16_10 mlp_784_24_10 cnn_c4k3_p2_f10; do
    [ -s "$T/out/$n.dcz" ] || fail "$n.dcz missing"
    bytes=$(stat -c %s "$T/out/$n.dcz")
    jq -e --arg n $n --argjson b "$bytes" '.[] | select(.model == $n) | .file_bytes == $b and .ratio > 1' \
        "$T/out/summary.json" > /dev/null || fail "$n: the row's size is not the file's ($bytes)"
    acc=$("$DCZ" eval "$T/out/$n.dcz" --data $D --json | json_field accuracy /dev/stdin)
    jq -e --arg n $n --argjson a "$acc" '.[] | select(.model == $n) | .accuracy.encode == $a' \
        "$T/out/summary.json" > /dev/null || fail "$n: the row's accuracy is not eval's ($acc)"
done

# GNU parallel over the folder, the broken model left out
if ! command -v parallel > /dev/null 2>&1; then
    echo "SKIP compress-all.sh: GNU parallel is not installed (Debian: parallel)"
    exit 0
fi
rm "$M/zz_broken.onnx"
bash "$B/compress-all.sh" "$M" $D "$T/par" 2 > "$T/par.csv" 2> "$T/par.err" || { cat "$T/par.err"; fail "compress-all.sh"; }
[ "$(wc -l < "$T/par/summary.csv")" -eq 4 ] || fail "parallel summary: $(cat "$T/par/summary.csv")"
for n in mlp_784_16_10 mlp_784_24_10 cnn_c4k3_p2_f10; do
    cmp "$T/out/$n.dcz" "$T/par/$n.dcz" > /dev/null ||
        [ "$("$DCZ" info "$T/out/$n.dcz" --json | json_field model_hash /dev/stdin)" = \
          "$("$DCZ" info "$T/par/$n.dcz" --json | json_field model_hash /dev/stdin)" ] ||
        fail "$n: parallel and the array wrote different models"
done
exit 0
