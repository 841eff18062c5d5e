#!/usr/bin/env bash
# demo.sh: the main job. Trains LeNet-300-100 on Fashion-MNIST, compresses it
# with Deep Compression's defaults (prune + retrain, trained quantization,
# Huffman coding), then prints the per-layer table in the form of the
# paper's Table 2 and the size/accuracy waterfall by stage, every accuracy
# measured by libdcz on the file of that stage.
#
#   bash samples/demo.sh [MODEL]     MODEL: lenet300 (default)
# Files go to demo-out/ (DCZ_DEMO_OUT overrides).
set -eu
cd "$(dirname "$0")/.."
model=${1:-lenet300}
out=${DCZ_DEMO_OUT:-demo-out}
dcz=bin/dcz
case "$model" in
    lenet300) arch=lenet300 ;;
    *) echo "demo: unknown model '$model' (known: lenet300)" >&2; exit 1 ;;
esac
mkdir -p "$out"
start=$(date +%s)
echo "== 1. train $arch on Fashion-MNIST (dense fp32)"
$dcz train --arch "$arch" --data fashion-mnist -o "$out/$model-dense.dcz"
echo
echo "== 2. compress: prune + retrain, quantize + fine-tune, Huffman-code"
$dcz compress "$out/$model-dense.dcz" --data fashion-mnist --keep-stages "$out" -o "$out/$model.dcz"
echo
echo "== 3. the compressed file, as libdcz sees it"
$dcz info "$out/$model.dcz"
echo
$dcz eval "$out/$model.dcz" --data fashion-mnist
echo
echo "demo: $(( $(date +%s) - start )) s; files in $out/"
