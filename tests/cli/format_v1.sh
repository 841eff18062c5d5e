#!/usr/bin/env bash
# Files of format 1.2 (tests/fixtures/v1, written by the release before
# graph records named their inputs) load and run to exactly the outputs
# that release computed; dcz info reads each. The dense fp32 files (*-dense)
# run dense kernels that sum in another order than that release's scalar
# loop (vector lanes; fused multiply-adds), and so do compressed files whose
# sparse convolutions libdcz expands to dense weights or runs on the shift
# form on this CPU (dcz info: "expanded at load", conv2d_shift or
# conv2d_depthwise; all fuse
# each product into its sum): theirs agree within 1e-6 of 1 + |output|
# instead. Every file ends in a softmax, whose exponential is libdcz's own
# now (shapes.h: the same bits on every machine and on the GPU, within an
# ulp of the C library's expf that release called): the other files agree
# within 4 ulps (2^-21 of |output|) instead of bit for bit.
source "$(dirname "$0")/lib.bash"
V1="$ROOT/tests/fixtures/v1"
zcat "$ROOT/tests/fixtures/onnx/inputs.f32.gz" > "$T/in.f32" || fail "inputs"
n=0
for f in "$V1"/*.dcz; do
    name=$(basename "$f" .dcz)
    shape=100,1,28,28
    case $name in mlp*) shape=100,784 ;; esac
    expect 0 "$DCZ" run "$f" --raw "$T/in.f32" --shape $shape --top 1 -o "$T/$name.out"
    # the tolerance: absolute 1e-6 and relative 1e-6 for the reordered sums,
    # relative 2^-21 for the softmax's exponential alone
    abs=0 rel=0.000000476837158203125
    if [[ $name == *-dense ]] || "$DCZ" info "$f" | grep -q 'expanded at load\|conv2d_shift\|conv2d_depthwise'; then
        abs=0.000001 rel=0.000001
    fi
    values=$(( $(stat -c %s "$V1/$name.out.f32") / 4 ))
    paste <(od -An -v -w4 -f "$T/$name.out") <(od -An -v -w4 -f "$V1/$name.out.f32") |
        awk -v want="$values" -v abs=$abs -v rel=$rel '{ d = $1 - $2; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (d > abs + rel * m) bad++; n++ }
             END { exit !(n == want && n > 0 && bad == 0) }' ||
        fail "$name: outputs beyond rounding of the 1.2 release's"
    expect 0 "$DCZ" info "$f"
    n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n fixtures found in $V1"
echo "ok: $n files of format 1.2 give their release's outputs (within the dense kernels' and the softmax's rounding)"
