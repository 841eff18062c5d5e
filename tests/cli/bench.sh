#!/usr/bin/env bash
# dcz bench: the JSON summary scripts rely on (median_us, p99_us, runs and
# the other order statistics, consistent with each other), the text report,
# batches, and errors. Speed itself is never asserted.
source "$(dirname "$0")/lib.bash"
M="$ROOT/tests/fuzz/corpus/dcz"
for f in enc5_coding1.dcz conv_net_a.dcz calib_int8_conv.dcz; do
    "$DCZ" bench "$M/$f" --batch 3 --runs 25 --warmup 2 --json > "$T/b.json" || fail "bench $f"
    [ "$(json_field runs "$T/b.json")" = 25 ] || fail "$f runs: $(cat "$T/b.json")"
    [ "$(json_field batch "$T/b.json")" = 3 ] || fail "$f batch"
    awk -v a="$(json_field min_us "$T/b.json")" -v b="$(json_field median_us "$T/b.json")" \
        -v c="$(json_field p90_us "$T/b.json")" -v d="$(json_field p99_us "$T/b.json")" \
        -v e="$(json_field max_us "$T/b.json")" -v l="$(json_field load_us "$T/b.json")" \
        'BEGIN { exit !(a > 0 && a <= b && b <= c && c <= d && d <= e && l > 0) }' ||
        fail "$f: order statistics out of order: $(cat "$T/b.json")"
done
[ "$(json_field scheme "$T/b.json")" = int8 ] || fail "calibrated model scheme"
"$DCZ" bench "$M/calib_int8_conv.dcz" --fp32 --runs 5 --json > "$T/b.json" || fail "bench --fp32"
[ "$(json_field scheme "$T/b.json")" = fp32 ] || fail "--fp32 scheme"
"$DCZ" bench "$M/enc1_coding0.dcz" --runs 10 > "$T/b.txt" || fail "bench text"
grep -q '^run .*median' "$T/b.txt" && grep -q '^load ' "$T/b.txt" || fail "text report: $(cat "$T/b.txt")"
# --per-layer: a line and a JSON entry for each layer, in the model's
# order, the shares summing to 1
for f in conv_net_a.dcz calib_int8_conv.dcz; do
    "$DCZ" bench "$M/$f" --runs 9 --per-layer --json > "$T/p.json" || fail "bench --per-layer $f"
    "$DCZ" info "$M/$f" --json > "$T/i.json" || fail "info $f"
    [ "$(jq -c '[.layers[].name]' "$T/p.json")" = "$(jq -c '[.layers[].name]' "$T/i.json")" ] ||
        fail "$f --per-layer: not every layer in order: $(cat "$T/p.json")"
    jq -e 'all(.layers[]; .median_us >= 0 and (.kernel | length) > 0) and
           ([.layers[].share] | add - 1 | fabs < 1e-6)' "$T/p.json" > /dev/null ||
        fail "$f --per-layer: times or shares: $(cat "$T/p.json")"
done
"$DCZ" bench "$M/conv_net_a.dcz" --runs 9 --per-layer > "$T/p.txt" || fail "bench --per-layer text"
grep -q '^conv1 ' "$T/p.txt" && grep -q '^total ' "$T/p.txt" || fail "--per-layer table: $(cat "$T/p.txt")"
# --per-layer on a GPU: each layer's device time; without one, the GPU's
# absence and exit 4 (the run's own checks are scripts/gpu-check.sh's)
"$DCZ" bench "$M/conv_net_a.dcz" --runs 9 --per-layer --device gpu > "$T/g.txt" 2> "$T/err"
rc=$?
if [ $rc = 0 ]; then
    grep -q '^conv1 ' "$T/g.txt" && grep -q '^total ' "$T/g.txt" || fail "--per-layer on the GPU: $(cat "$T/g.txt")"
else
    [ $rc = 4 ] && grep -Eq 'GPU|CUDA' "$T/err" || fail "--per-layer --device gpu: exit $rc: $(cat "$T/err")"
fi
expect 1 "$DCZ" bench "$M/enc1_coding0.dcz" --runs 0
expect 1 "$DCZ" bench "$M/enc1_coding0.dcz" --batch 0
expect 2 "$DCZ" bench "$M/regress-huge-sparse-shape.dcz"
expect 2 "$DCZ" bench "$T/missing.dcz"
exit 0
