#!/usr/bin/env bash
# A small CNN with batch norm through every stage on Fashion-MNIST: batch
# norm is folded away in the file train writes, every stage's file runs in
# the runtime with the accuracy it reported, conv layers get their own
# defaults (8-bit codebooks and positions) and rules by name, and info
# describes conv layers. Also: a spec that does not fit the data is refused.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from
ARCH=cnn:c6k3-p2-c8k3s2p1-a2-f24-f10
"$DCZ" train --arch $ARCH --epochs 1 --data $D --seed 5 --threads 2 -q --json -o "$T/dense.dcz" > "$T/train.json" ||
    fail "train"
acc=$(json_field accuracy "$T/train.json")
awk -v a="$acc" 'BEGIN { exit !(a > 0.70) }' || fail "dense accuracy $acc too low"
"$DCZ" info "$T/dense.dcz" --json > "$T/info0.json" || fail "info dense"
grep -q '"name":"bn1"' "$T/info0.json" && fail "batch norm left in the file"
grep -q '"name":"conv1","op":"conv2d","shape":\[6,1,3,3\],[^}]*"macs_per_sample":42336,[^}]*"inputs":\["input"\],"output_shape":\[6,28,28\]' "$T/info0.json" ||
    fail "conv1 entry: $(cat "$T/info0.json")"
grep -q '"name":"pool2","op":"avgpool"' "$T/info0.json" || fail "avgpool entry"
# params: conv1 6*9+6, conv2 8*6*9+8, fc1 (8*3*3)*24+24, fc2 24*10+10
[ "$(json_field dense_fp32_bytes "$T/info0.json")" = $(( (60 + 440 + 1752 + 250) * 4 )) ] || fail "dense_fp32_bytes"
"$DCZ" eval "$T/dense.dcz" --data $D --json > "$T/e.json" || fail "eval dense"
[ "$acc" = "$(json_field accuracy "$T/e.json")" ] || fail "train reported $acc, eval says $(json_field accuracy "$T/e.json")"

"$DCZ" compress "$T/dense.dcz" --data $D --rounds 1 --prune-epochs 1 --final-epochs 0 --quant-epochs 1 \
    --sparsity 'conv*=0.5,fc*=0.8' --bits 'conv2=6' --threads 2 --keep-stages "$T" -q --json -o "$T/final.dcz" \
    > "$T/compress.json" || fail "compress"
for st in prune quantize final; do
    "$DCZ" eval "$T/$st.dcz" --data $D --json > "$T/e.json" || fail "eval $st"
done
[ "$(json_field accuracy "$T/compress.json")" = "$(json_field accuracy "$T/e.json")" ] || fail "compress accuracy"
awk -v a="$(json_field accuracy "$T/e.json")" -v d="$acc" 'BEGIN { exit !(a > d - 0.05) }' ||
    fail "compressed accuracy $(json_field accuracy "$T/e.json") far below dense $acc"
"$DCZ" info "$T/final.dcz" --json > "$T/info.json" || fail "info"
tr '{' '\n' < "$T/info.json" > "$T/layers.txt"
# the quantizer's codebooks are as asked: 8 bits for conv, the rule's 6 for
# conv2, 5 for fully connected layers, positions 8 bits for conv
"$DCZ" info "$T/quantize.dcz" --json | tr '{' '\n' > "$T/qlayers.txt" || fail "info quantize"
grep '"name":"conv1"' "$T/qlayers.txt" | grep -q '"index_bits":8,' || fail "conv1 is not 8-bit: $(grep conv1 "$T/qlayers.txt")"
grep '"name":"conv2"' "$T/qlayers.txt" | grep -q '"index_bits":6,' || fail "conv2 rule not applied"
grep '"name":"conv2"' "$T/qlayers.txt" | grep -q '"gap_bits":8,' || fail "conv2 positions are not 8-bit"
grep '"name":"fc1"' "$T/qlayers.txt" | grep -q '"index_bits":5,' || fail "fc1 is not 5-bit"
grep '"name":"conv2"' "$T/layers.txt" | grep -q '"density":0.5,' || fail "conv2 density"
# the encoded file keeps only the codebook entries in use, indices as wide
# as they need, and positions as wide as makes them smallest
for l in conv1 conv2 fc1 fc2; do
    e=$(grep "\"name\":\"$l\"" "$T/layers.txt" | sed 's/.*"codebook_entries":\([0-9]*\).*"index_bits":\([0-9]*\),.*/\1 \2/')
    set -- $e
    awk -v k="$1" -v b="$2" 'BEGIN { exit !(k >= 1 && 2 ^ b >= k && (b == 1 || 2 ^ (b - 1) < k)) }' ||
        fail "$l: $1 entries in $2-bit indices"
done
e=$(grep '"name":"conv2"' "$T/layers.txt" | sed 's/.*"codebook_entries":\([0-9]*\).*/\1/')
[ "$e" -le 64 ] || fail "conv2 has $e codebook entries, more than its 6 bits"
"$DCZ" encode "$T/final.dcz" --gap-bits 'conv*=8,fc*=8' -o "$T/wide.dcz" -q || fail "encode with 8-bit positions"
"$DCZ" info "$T/wide.dcz" --json | tr '{' '\n' | grep '"name":"conv2"' | grep -q '"gap_bits":8,' ||
    fail "gap-bits rule not applied"
"$DCZ" info "$T/final.dcz" > "$T/info.txt" || fail "info text"
grep -q '^conv2 *8x6x3x3 ' "$T/info.txt" || fail "info table conv2 row: $(cat "$T/info.txt")"
# the kernel column: one short line per weighted layer, each kernel's reason once
# and the kernel the CUDA backend would use, with a few words of why
sed -n '/^layer *runtime kernel *on a GPU/,/^$/p' "$T/info.txt" > "$T/kernels.txt"
grep -Eq '^conv1 +conv2d_[a-z0-9_]+ +im2col_t\+spmm_chunks__cuda(\|gemm)?: (one group, under|[0-9]+%\+ dense: cublas at) ' "$T/kernels.txt" ||
    fail "conv1's kernel line: $(cat "$T/kernels.txt")"
awk 'length > 100 && !/^  /' "$T/kernels.txt" | grep -q . && fail "a long kernel line: $(cat "$T/kernels.txt")"
grep -q '"kernel":"conv2d_[a-z0-9_]*","kernel_reason":"[^"]' "$T/info.json" || fail "kernel and its reason in JSON"
# a batch goes through the convolutions by chunks of samples, through the
# fully connected layers whole
grep -Eq '^  batches: conv1 \.\. [a-z0-9]+ by chunks of [0-9]+ samples?,' "$T/kernels.txt" ||
    fail "no chunks line: $(cat "$T/kernels.txt")"
tr '{' '\n' < "$T/info.json" | grep '"name":"conv1"' | grep -Eq '"batch_chunk":[1-9]' || fail "conv1's batch_chunk"
tr '{' '\n' < "$T/info.json" | grep '"name":"fc2"' | grep -q '"batch_chunk":0,' || fail "fc2's batch_chunk"
reasons=$(grep -v '^  batches: ' "$T/kernels.txt" | grep -c '^  [^ ].*: ')
twice=$(grep -v '^  batches: ' "$T/kernels.txt" | grep '^  [^ ].*: ' | sort | uniq -d | wc -l)
[ "$reasons" -ge 1 ] && [ "$twice" = 0 ] || fail "$reasons reasons, $twice of them twice: $(cat "$T/kernels.txt")"

# LeNet-5, which has no batch norm, warms its lr up over its first epoch
# unless told otherwise (the same model as --warmup-epochs 1, another than
# 0); the other architectures start at the full rate
L5="--epochs 1 --data $D --validation 11000 --seed 2 --threads 2 -q"
"$DCZ" train --arch lenet5 $L5 -o "$T/w.dcz" && "$DCZ" train --arch lenet5 $L5 --warmup-epochs 1 -o "$T/w1.dcz" &&
    "$DCZ" train --arch lenet5 $L5 --warmup-epochs 0 -o "$T/w0.dcz" || fail "train lenet5"
[ -n "$(model_hash "$T/w.dcz")" ] && [ "$(model_hash "$T/w.dcz")" = "$(model_hash "$T/w1.dcz")" ] &&
    [ "$(model_hash "$T/w.dcz")" != "$(model_hash "$T/w0.dcz")" ] || fail "lenet5's default warmup is not one epoch"
A="--epochs 1 --data $D --validation 11000 --seed 2 --threads 2 -q"
"$DCZ" train --arch $ARCH $A -o "$T/c.dcz" && "$DCZ" train --arch $ARCH $A --warmup-epochs 0 -o "$T/c0.dcz" ||
    fail "train $ARCH"
[ "$(model_hash "$T/c.dcz")" = "$(model_hash "$T/c0.dcz")" ] || fail "$ARCH warms up by default"

# an input shape that does not match the data
expect 2 "$DCZ" train --arch cnn:i3x32x32-c4k3-f10 --epochs 1 --data $D -q -o "$T/x.dcz"
# malformed specs are usage errors
expect 1 "$DCZ" train --arch cnn:c4k3-p2 --epochs 1 --data $D -q -o "$T/x.dcz"
expect 1 "$DCZ" train --arch cnn:c0k3-f10 --epochs 1 --data $D -q -o "$T/x.dcz"
[ ! -e "$T/x.dcz" ] || fail "a failed train left an output"
exit 0
