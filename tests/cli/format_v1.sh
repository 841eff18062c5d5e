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
# instead.
source "$(dirname "$0")/lib.bash"
V1="$ROOT/tests/fixtures/v1"
zcat "$ROOT/tests/fixtures/onnx/inputs.f32.gz" > "$T/in.f32" || fail "inputs"
n=0
for f in "$V1"/*.dcz; do
    name=$(basename "$f" .dcz)
    shape=100,1,28,28
    case $name in mlp*) shape=100,784 ;; esac
    expect 0 "$DCZ" run "$f" --raw "$T/in.f32" --shape $shape --top 1 -o "$T/$name.out"
    if [[ $name == *-dense ]] || "$DCZ" info "$f" | grep -q 'expanded at load\|conv2d_shift\|conv2d_depthwise'; then
        values=$(( $(stat -c %s "$V1/$name.out.f32") / 4 ))
        paste <(od -An -v -w4 -f "$T/$name.out") <(od -An -v -w4 -f "$V1/$name.out.f32") |
            awk -v want="$values" '{ d = $1 - $2; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (d > 1e-6 * (1 + m)) bad++; n++ }
                 END { exit !(n == want && n > 0 && bad == 0) }' ||
            fail "$name: outputs beyond rounding of the 1.2 release's"
    else
        cmp -s "$T/$name.out" "$V1/$name.out.f32" || fail "$name: outputs differ from the 1.2 release's"
    fi
    expect 0 "$DCZ" info "$f"
    n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n fixtures found in $V1"
echo "ok: $n files of format 1.2 give their release's outputs (bit for bit but for the dense kernels' rounding)"
