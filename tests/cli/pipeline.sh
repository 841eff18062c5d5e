#!/usr/bin/env bash
# Every stage end to end on Fashion-MNIST with a small network: each stage's
# file runs in the runtime, the accuracy each stage reports equals `dcz eval`
# on the file it wrote, info --json describes the file, the same seed gives
# byte-identical files, and one-shot prune/quantize work without data.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
"$DCZ" train --arch mlp:784-48-24-10 --epochs 2 --data $D --seed 7 --threads 1 -q --json -o "$T/dense.dcz" > "$T/train.json" || fail "train"
acc=$(json_field accuracy "$T/train.json")
"$DCZ" eval "$T/dense.dcz" --data $D --json > "$T/eval.json" || fail "eval dense"
[ "$acc" = "$(json_field accuracy "$T/eval.json")" ] || fail "train reported $acc, eval says $(json_field accuracy "$T/eval.json")"
[ "$(json_field samples "$T/eval.json")" = 2000 ] || fail "samples"
awk -v a="$acc" 'BEGIN { exit !(a > 0.75) }' || fail "dense accuracy $acc too low"

"$DCZ" prune "$T/dense.dcz" --data $D --sparsity 'fc*=0.8,fc3=0.5' --rounds 2 --prune-epochs 1 --final-epochs 1 \
    --threads 1 -q --json -o "$T/pruned.dcz" > "$T/prune.json" || fail "prune"
"$DCZ" quantize "$T/pruned.dcz" --data $D --bits 4 --quant-epochs 1 --threads 1 -q --json -o "$T/quant.dcz" > "$T/quant.json" || fail "quantize"
"$DCZ" encode "$T/quant.dcz" --data $D -q --json -o "$T/final.dcz" > "$T/encode.json" || fail "encode"
for s in prune quant encode; do
    f=$T/$( [ $s = prune ] && echo pruned || { [ $s = quant ] && echo quant || echo final; } ).dcz
    "$DCZ" eval "$f" --data $D --json > "$T/e.json" || fail "eval $s"
    [ "$(json_field accuracy "$T/$s.json")" = "$(json_field accuracy "$T/e.json")" ] ||
        fail "$s reported $(json_field accuracy "$T/$s.json"), eval says $(json_field accuracy "$T/e.json")"
done
# sizes shrink stage by stage, and Huffman coding does not change accuracy
b_dense=$(stat -c %s "$T/dense.dcz"); b_pr=$(stat -c %s "$T/pruned.dcz")
b_q=$(stat -c %s "$T/quant.dcz"); b_f=$(stat -c %s "$T/final.dcz")
[ "$b_pr" -lt "$b_dense" ] && [ "$b_q" -lt "$b_pr" ] && [ "$b_f" -lt "$b_q" ] || fail "sizes $b_dense $b_pr $b_q $b_f"
[ "$(json_field accuracy "$T/quant.json")" = "$(json_field accuracy "$T/encode.json")" ] || fail "encode changed accuracy"

"$DCZ" info "$T/final.dcz" --json > "$T/info.json" || fail "info"
[ "$(json_field file_bytes "$T/info.json")" = "$b_f" ] || fail "info file_bytes"
# encode may have removed units no layer reads (tests/cli/shrink.sh): the
# widths are the file's, the dense size that of the network it holds
u1=$(jq '.layers[] | select(.name == "fc1") | .shape[0]' "$T/info.json")
u2=$(jq '.layers[] | select(.name == "fc2") | .shape[0]' "$T/info.json")
[ "$u1" -ge 1 ] && [ "$u1" -le 48 ] && [ "$u2" -ge 1 ] && [ "$u2" -le 24 ] || fail "widths $u1 $u2"
[ "$(json_field dense_fp32_bytes "$T/info.json")" = $(( (784*u1 + u1 + u1*u2 + u2 + u2*10 + 10) * 4 )) ] ||
    fail "dense_fp32_bytes"
grep -q '"stages":\["train","prune","quantize","encode"\]' "$T/info.json" || fail "stages: $(cat "$T/info.json")"
grep -q "\"name\":\"fc1\",\"op\":\"dense\",\"shape\":\[$u1,784\]" "$T/info.json" || fail "fc1 layer entry"
[ "$(json_field dense_fp32_bytes "$T/encode.json")" = $(( (784*48 + 48 + 48*24 + 24 + 24*10 + 10) * 4 )) ] ||
    fail "encode's ratio is not against its input's network"
grep -q '"encoding":"codebook"' "$T/info.json" || fail "encoding"
"$DCZ" info "$T/final.dcz" > "$T/info.txt" || fail "info text"
grep -q '^encode ' "$T/info.txt" || fail "waterfall"

# same seed and threads: byte-identical outputs (the command line is part of
# the file's provenance, so both runs use the same one, in two directories)
for dir in a b; do
    mkdir -p "$T/$dir" && cd "$T/$dir" || fail "mkdir"
    "$DCZ" train --arch mlp:784-48-24-10 --epochs 1 --data $D --seed 3 --threads 1 -q -o dense.dcz || fail "train $dir"
    "$DCZ" compress dense.dcz --data $D --rounds 1 --prune-epochs 1 --final-epochs 0 --quant-epochs 1 \
        --threads 1 --keep-stages . -q -o final.dcz || fail "compress $dir"
done
cmp -s "$T/a/dense.dcz" "$T/b/dense.dcz" || fail "train is not deterministic"
cmp -s "$T/a/final.dcz" "$T/b/final.dcz" || fail "compress is not deterministic"
cd "$T" || fail "cd"
# the summary says whether accuracy was lost or gained
"$DCZ" compress "$T/a/dense.dcz" --data $D --rounds 1 --prune-epochs 0 --final-epochs 0 --quant-epochs 0 \
    -o "$T/sum.dcz" 2> "$T/sum.err" || fail "compress for the summary"
grep -Eq 'compress: .*accuracy [0-9.]+% \((lost|gained) [0-9.]+ points\)' "$T/sum.err" ||
    fail "summary: $(tail -n 1 "$T/sum.err")"
# the history in the final file: each stage's recorded accuracy and size are
# those of the file that stage wrote
"$DCZ" info "$T/a/final.dcz" --json | tr '{' '\n' > "$T/hist.txt"
for st in prune quantize; do
    rec=$(grep "\"stage\":\"$st\"" "$T/hist.txt")
    "$DCZ" eval "$T/a/$st.dcz" --data $D --json > "$T/e.json" || fail "eval $st.dcz"
    echo "$rec" | grep -q "\"accuracy\":$(json_field accuracy "$T/e.json")," || fail "$st: recorded '$rec', eval $(cat "$T/e.json")"
    echo "$rec" | grep -q "\"file_bytes\":$(stat -c %s "$T/a/$st.dcz")}" || fail "$st: recorded size '$rec'"
done

# without data: one-shot pruning and clustering only
"$DCZ" prune "$T/dense.dcz" --sparsity 0.9 -q -o "$T/os.dcz" || fail "one-shot prune"
"$DCZ" info "$T/os.dcz" --json > "$T/os.json"
grep -q '"density":0.1,' "$T/os.json" || fail "one-shot density: $(cat "$T/os.json")"
"$DCZ" quantize "$T/os.dcz" --bits 3 -q -o "$T/osq.dcz" || fail "cluster only"
"$DCZ" run "$T/osq.dcz" --data $D --index 5 --count 2 --top 2 > "$T/run.txt" || fail "run"
[ "$(grep -c '^sample' "$T/run.txt")" = 2 ] || fail "run output: $(cat "$T/run.txt")"
# raw float32 in, raw float32 out
head -c $((784 * 4 * 3)) /dev/urandom > "$T/x.f32"
"$DCZ" run "$T/osq.dcz" --input "$T/x.f32" -o "$T/y.f32" > /dev/null || fail "run raw"
[ "$(stat -c %s "$T/y.f32")" = $((3 * 10 * 4)) ] || fail "raw output size"
echo "pipeline ok"
