#!/usr/bin/env bash
# demo.sh: the main job. Trains a network on Fashion-MNIST, compresses it
# with Deep Compression (prune + retrain, trained quantization, Huffman
# coding), then prints the per-layer table in the form of the paper's
# Tables 2 and 3 and the size/accuracy waterfall by stage, every accuracy
# measured by libdcz on the file of that stage; then calibrates the
# compressed file for int8 execution, and draws figures beside the files
# (weight histograms by stage, kept weights, size waterfall, sensitivity).
#
#   bash samples/demo.sh [MODEL]     (or: make demo MODEL=...)
#
# MODEL: lenet300 (default; LeNet-300-100, a few minutes), lenet5 (LeNet-5,
# about half an hour on two cores), cnn (a conv-heavy CNN with batch norm,
# about an hour), resnet or mobilenetv2 (the graph presets, an hour or more). Each model's training and compression settings are
# in samples/recipes/MODEL-train.recipe and MODEL-compress.recipe (its
# [compress] and [calibrate] sections).
# Files go to demo-out/ (DCZ_DEMO_OUT overrides).
set -eu
cd "$(dirname "$0")/.."
model=${1:-lenet300}
out=${DCZ_DEMO_OUT:-demo-out}
dcz=bin/dcz
recipes=samples/recipes
case "$model" in
    lenet300|lenet5|cnn|resnet|mobilenetv2) ;;
    *) echo "demo: unknown model '$model' (known: lenet300, lenet5, cnn, resnet, mobilenetv2)" >&2; exit 1 ;;
esac
mkdir -p "$out/$model-stages"
start=$(date +%s)
echo "== 1. train $model on Fashion-MNIST (dense fp32)"
$dcz train --recipe "$recipes/$model-train.recipe" --data fashion-mnist -o "$out/$model-dense.dcz"
echo
echo "== 2. compress: prune + retrain, quantize + fine-tune, Huffman-code"
$dcz compress "$out/$model-dense.dcz" --recipe "$recipes/$model-compress.recipe" --data fashion-mnist \
    --keep-stages "$out/$model-stages" -o "$out/$model.dcz"
echo
echo "== 3. the compressed file, as libdcz sees it"
$dcz info "$out/$model.dcz"
echo
$dcz eval "$out/$model.dcz" --data fashion-mnist
echo
echo "== 4. calibrate the compressed model for int8 execution (the runtime then runs it on integers)"
$dcz calibrate "$out/$model.dcz" --recipe "$recipes/$model-compress.recipe" --data fashion-mnist --scheme int8 -o "$out/$model-int8.dcz"
echo
# the layer the figures show: the largest, where compression happens
case "$model" in
    lenet300|lenet5) layer=fc1 ;;
    cnn) layer=conv5 ;;
    resnet) layer=res3.conv2 ;;
    mobilenetv2) layer=inv8.project ;;
esac
echo "== 5. figures"
st="$out/$model-stages"
$dcz plot "$out/$model-dense.dcz" "$st/prune.dcz" "$st/quantize.dcz" --kind weights --layer $layer \
    -o "$out/$model-weights.png"
$dcz plot "$out/$model.dcz" --kind sparsity --layer $layer -o "$out/$model-sparsity.png"
$dcz plot "$out/$model.dcz" --kind waterfall -o "$out/$model-waterfall.png"
$dcz plot "$out/$model-dense.dcz" --kind sensitivity --data fashion-mnist --validation 2000 \
    -o "$out/$model-sensitivity.png"
echo "  $model-weights.png: the weights of $layer dense, pruned and quantized, the shared values marked"
echo "  $model-sparsity.png: which weights of $layer the compressed file keeps"
echo "  $model-waterfall.png: file size and accuracy by stage"
echo "  $model-sensitivity.png: accuracy with each layer alone pruned, without retraining"
echo
echo "demo: $(( $(date +%s) - start )) s; files in $out/"
