#!/usr/bin/env bash
# ONNX files as PyTorch 2.9+ writes them by default (torch.onnx.export with
# the dynamo exporter: opset 20, weights as external data in NAME.onnx.data;
# the fixtures of ../shared/fixtures/onnx-torch2.11 beside the repository,
# made with PyTorch 2.11, SKIP when that folder is absent):
# - all seven (lenet5, resnet8, densetiny, shufflenet_v2_x0_5, squeezenet1_1,
#   mnasnet0_5, mobilenet_v3_small) import and give PyTorch's outputs on two
#   samples within 1e-5 of the largest |output| (max |dcz - torch| / max
#   |torch|); each exported and imported again gives the same outputs bit
#   for bit; ShuffleNet's Reshape-Transpose-Reshape is one CHANNEL_SHUFFLE
#   and its Splits SLICE layers, DenseNet's batch norms after a Concat or a
#   Relu per-channel affines (depthwise 1x1 convolutions);
# - external data that cannot be read is refused with exit code 2: a model
#   read from standard input, one whose data file is missing, or truncated;
#   a model given by a bare file name finds its data in the current folder.
source "$(dirname "$0")/lib.bash"
FIX="$ROOT/../shared/fixtures/onnx-torch2.11"
if [ ! -d "$FIX" ]; then
    echo "SKIP PyTorch 2.11 ONNX fixtures: $FIX is absent"
    exit 0
fi

# le X LIMIT: X is a number and X <= LIMIT
le() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x ~ /^[0-9.e+-]+$/ && x + 0 <= l + 0) }'; }

# ---- the networks dcz holds: PyTorch's outputs, and the same after export -----
for m in lenet5:1x28 resnet8:1x28 densetiny:1x28 shufflenet_v2_x0_5:3x224 squeezenet1_1:3x224 mnasnet0_5:3x224 \
         mobilenet_v3_small:3x224; do
    n=${m%%:*} c=${m#*:}
    shape=2,${c%x*},${c#*x},${c#*x}
    "$DCZ" import "$FIX/$n.onnx" --json -o "$T/$n.dcz" > "$T/$n.json" || fail "import $n"
    [ "$(json_field opset "$T/$n.json")" = 20 ] || fail "$n: not read as opset 20: $(cat "$T/$n.json")"
    "$DCZ" run "$T/$n.dcz" --raw "$FIX/$n.in.f32" --shape $shape -q -o "$T/$n.out" > /dev/null || fail "run $n"
    r=$(reldiff "$T/$n.out" "$FIX/$n.logits.f32")
    echo "$n: max |dcz - torch| / max |torch| = $r"
    le "$r" 1e-5 || fail "$n: outputs differ from PyTorch's by $r of the largest"
    "$DCZ" export "$T/$n.dcz" -q -o "$T/$n.x.onnx" > /dev/null || fail "export $n"
    "$DCZ" import "$T/$n.x.onnx" -q -o "$T/$n.x.dcz" || fail "import the export of $n"
    "$DCZ" run "$T/$n.x.dcz" --raw "$FIX/$n.in.f32" --shape $shape -q -o "$T/$n.x.out" > /dev/null ||
        fail "run the export of $n"
    cmp -s "$T/$n.out" "$T/$n.x.out" || fail "$n: exported and imported again, other outputs"
done
grep -q '"op":"global_avgpool","from":"ReduceMean ' "$T/resnet8.json" || fail "resnet8: no global_avgpool"
grep -q '"op":"flatten","from":"ReduceMean ' "$T/mnasnet0_5.json" || fail "mnasnet0_5: ReduceMean without keepdims"
grep -q '"op":"mul","from":"Mul ' "$T/mobilenet_v3_small.json" || fail "mobilenet_v3_small: no mul"

grep -q '"op":"channel_shuffle","from":"Transpose ' "$T/shufflenet_v2_x0_5.json" || fail "shufflenet: no shuffle"
[ "$(grep -o '"op":"slice","from":"Split ' "$T/shufflenet_v2_x0_5.json" | wc -l)" = 26 ] ||
    fail "shufflenet: not 26 slices of 13 Splits"
[ "$(grep -o '"op":"conv2d","from":"BatchNormalization ' "$T/densetiny.json" | wc -l)" = 5 ] ||
    fail "densetiny: not 5 batch norms as per-channel affines"

# ---- external data: where it is found, and what is refused --------------------
(cd "$FIX" && "$DCZ" import lenet5.onnx -q -o "$T/bare.dcz") || fail "a bare file name"
"$DCZ" run "$T/bare.dcz" --raw "$FIX/lenet5.in.f32" --shape 2,1,28,28 -q -o "$T/bare.out" > /dev/null &&
    cmp -s "$T/bare.out" "$T/lenet5.out" || fail "a bare file name gives another model"
expect 2 "$DCZ" import - -o "$T/u.dcz" < "$FIX/lenet5.onnx"
grep -q "standard input" "$T/err" || fail "from standard input: $(cat "$T/err")"
mkdir "$T/alone" && cp "$FIX/lenet5.onnx" "$T/alone/"
expect 2 "$DCZ" import "$T/alone/lenet5.onnx" -o "$T/u.dcz"
grep -q "cannot open its external data file 'lenet5.onnx.data'" "$T/err" || fail "no data file: $(cat "$T/err")"
head -c 100000 "$FIX/lenet5.onnx.data" > "$T/alone/lenet5.onnx.data"
expect 2 "$DCZ" import "$T/alone/lenet5.onnx" -o "$T/u.dcz"
grep -q "beyond the end of 'lenet5.onnx.data' (100000 bytes)" "$T/err" || fail "truncated data: $(cat "$T/err")"
[ ! -e "$T/u.dcz" ] || fail "a refused model left an output"
echo "ok"
