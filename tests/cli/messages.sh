#!/usr/bin/env bash
# Messages a newcomer meets: each error names the fix (the verb, option,
# dataset or layer meant), refusals say what to do, and reports print
# nothing that reads wrong (rounds of a one-shot prune, a threshold of -1,
# one summary line of calibration methods).
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
ONNX="$ROOT/tests/fixtures/onnx/mlp.onnx"
# has STRING: the last command's stderr holds STRING
has() { grep -qF -- "$1" "$T/err" || fail "no '$1' in: $(cat "$T/err")"; }
"$DCZ" train --arch mlp:784-16-10 --epochs 1 --data $D --seed 3 --threads 1 -q -o "$T/m.dcz" || fail "train"

# an ONNX model given to a verb that reads a .dcz, and a .dcz to import
expect 2 "$DCZ" info "$ONNX"
has "is an ONNX model, not a .dcz"; has "dcz import $ONNX -o"
expect 2 "$DCZ" prune "$ONNX" --sparsity 0.5 -o "$T/p.dcz"
has "dcz import $ONNX"
expect 2 "$DCZ" eval "$ONNX" --data $D
has "dcz import $ONNX"
expect 2 "$DCZ" run "$ONNX" --data $D
has "dcz import $ONNX"
expect 2 "$DCZ" bench "$ONNX" --runs 1
has "dcz import $ONNX"
expect 2 "$DCZ" import "$T/m.dcz" -o "$T/i.dcz"
has "is already a .dcz model"; has "dcz export $T/m.dcz"
# a file that is neither keeps the plain message
printf 'not a model' > "$T/junk.onnx"
expect 2 "$DCZ" info "$T/junk.onnx"
grep -q 'ONNX' "$T/err" && fail "junk taken for ONNX: $(cat "$T/err")"

# did you mean: options, recipe keys, verbs, the dataset's name
expect 1 "$DCZ" prune "$T/m.dcz" --prune-epoch 2 -o "$T/p.dcz"
has "did you mean --prune-epochs?"
expect 1 "$DCZ" compress "$T/m.dcz" --data $D --quant-lr=0.1 --bit 4 -o "$T/p.dcz"
has "did you mean --bits?"
expect 1 "$DCZ" prune "$T/m.dcz" --zzzzzz 2 -o "$T/p.dcz"
grep -q 'did you mean' "$T/err" && fail "a suggestion for nothing close: $(cat "$T/err")"
printf 'sparsity = 0.5\nprune-epoch = 2\n' > "$T/r.recipe"
expect 1 "$DCZ" prune "$T/m.dcz" --recipe "$T/r.recipe" -o "$T/p.dcz"
has "r.recipe:2: unknown key 'prune-epoch' (did you mean 'prune-epochs'?"
expect 1 "$DCZ" prnue "$T/m.dcz"
has "did you mean 'prune'?"
expect 2 "$DCZ" eval "$T/m.dcz" --data fashion-mnst
has "did you mean --data fashion-mnist"
expect 2 "$DCZ" eval "$T/m.dcz" --data "$T/no-such-dir"
has "--data takes fashion-mnist"

# a layer pattern that matches none lists the layers there are
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity fc4=0.9 -o "$T/p.dcz"
has "'fc4' matches no layer with weights"; has "the 2 layers with weights: fc1, fc2"
expect 1 "$DCZ" quantize "$T/m.dcz" --bits 'fc11=4' -o "$T/p.dcz"
has "did you mean 'fc1'?"; has "fc1, fc2"
expect 1 "$DCZ" calibrate "$T/m.dcz" --data $D --method 'conv*=mse' --calib-batches 1 -o "$T/p.dcz"
has "fc1, fc2"
expect 1 "$DCZ" plot "$T/m.dcz" --kind weights --layer fc3 -o "$T/x.png"
has "the 2 layers with weights of $T/m.dcz: fc1, fc2"

# sparsity 1 would prune every weight of a layer: refused, saying why
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity 1.0 -o "$T/p.dcz"
has "sparsity 1 prunes every weight"; has "give a sparsity below 1"
expect 1 "$DCZ" compress "$T/m.dcz" --data $D --sparsity 'fc1=0.9,fc2=1' -o "$T/p.dcz"
has "layer fc2: sparsity 1"
[ ! -e "$T/p.dcz" ] || fail "a refused prune wrote its output"
# one-shot pruning (no --data) is one step, said so, and a layer left
# whole shows no threshold (not -1)
"$DCZ" prune "$T/m.dcz" --sparsity 'fc1=0.5,fc2=0' --threads 1 -o "$T/p.dcz" 2> "$T/err" || fail "one-shot prune"
grep -q 'prune round' "$T/err" && fail "rounds of a one-shot prune: $(cat "$T/err")"
has "prune: one shot to sparsity"
grep -q -- '-1\.0' "$T/err" && fail "a threshold of -1: $(cat "$T/err")"
grep -Eq '^fc2 +160 +160 +100\.00% +-$' "$T/err" || fail "fc2's line: $(cat "$T/err")"

# the quantization table says what its rms columns measure; without
# fine-tuning the tuned column is empty, not a copy
"$DCZ" quantize "$T/p.dcz" --threads 1 -o "$T/q.dcz" 2> "$T/err" || fail "quantize"
has "rms k-means"; has "how far the shared values lie from the weights before quantization"
grep -Eq '^fc1 .* -$' "$T/err" || fail "a tuned rms without fine-tuning: $(cat "$T/err")"
"$DCZ" quantize "$T/p.dcz" --data $D --quant-epochs 1 --threads 1 -o "$T/q.dcz" 2> "$T/err" || fail "quantize --data"
has "the tuned figure grows by design"
grep -Eq '^fc1 +5 +32 +[0-9]+ +[0-9]+ +[0-9.e-]+ +[0-9.e-]+$' "$T/err" || fail "the tuned column: $(cat "$T/err")"
echo "messages ok"
