#!/usr/bin/env bash
# train_epoch.sh: training speed on Fashion-MNIST, dcz's engine
# (build/bench/bench_train) next to PyTorch (bench/torch_train.py) on the
# same machine, in the same run, with the same thread count, network,
# batch (64), optimizer (SGD, momentum 0.9) and data, for
#   LeNet-5                 one epoch (60,000 samples)
#   the conv-heavy CNN      FRACTION of an epoch
#   the ResNet-style preset FRACTION of an epoch
#   the MobileNetV2-style preset  FRACTION of an epoch
# then, where there is a GPU, the same on the GPU (dcz's trainer with
# --device gpu next to PyTorch on CUDA, fp32 without TF32).
# PyTorch is Debian's python3-torch (on a GPU machine, whichever python3
# has a CUDA torch); without it the comparison is skipped with a note, and
# dcz's times are still printed. DATA=dir: the IDX files (default Debian's). Run it with nothing else
# running: on a machine whose vCPUs share a core, a second busy process
# halves a timing.
#
#   bash bench/train_epoch.sh [THREADS [FRACTION]]   (default: all cores, 0.2)
set -u
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
fraction=${2:-0.2}
bin=build/bench/bench_train
[ -x "$bin" ] || { echo "train_epoch: build $bin first (make bench)" >&2; exit 1; }

# Debian's python3-torch belongs to Debian's interpreter, which another
# python3 earlier on PATH may hide; PYTHON overrides
py=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
have_torch=1
"$py" -c 'import torch' 2> /dev/null || have_torch=0

echo "== training speed: batch 64, SGD momentum 0.9, $threads threads"
[ $have_torch = 1 ] || echo "PyTorch: SKIP (python3-torch is not installed; apt-get install python3-torch to compare)"
printf '%-12s %8s %10s %10s %12s %12s %10s\n' model samples "dcz (s)" "dcz /s" "PyTorch (s)" "PyTorch /s" "dcz/torch"
data=${DATA:-fashion-mnist}
# NAME BENCH_ARGS TORCH_ARCH FRACTION [DEVICE]
row() {
    local out secs n tsecs dev=${5:-cpu}
    out=$("$bin" -t "$threads" -D "$data" -d "$([ "$dev" = cuda ] && echo gpu || echo cpu)" $2) || { echo "$out"; exit 1; }
    if echo "$out" | grep -q SKIP; then echo "$out"; return 0; fi
    n=$(echo "$out" | sed -n 's/.*epoch 1: \([0-9]*\) samples in .*/\1/p' | head -n 1)
    secs=$(echo "$out" | sed -n 's/.*epoch 1: [0-9]* samples in \([0-9.]*\) s.*/\1/p' | head -n 1)
    tsecs=-
    if [ $have_torch = 1 ]; then
        tsecs=$(DATA=${DATA:-/usr/share/datasets/fashion-mnist} "$py" bench/torch_train.py "$3" "$threads" "$4" "$dev" 2>&1 |
            sed -n 's/torch_epoch_seconds \([0-9.]*\).*/\1/p')
        [ -n "$tsecs" ] || tsecs=-
    fi
    awk -v m="$1" -v n="$n" -v d="$secs" -v t="$tsecs" 'BEGIN {
        if (t == "-") printf "%-12s %8d %10.2f %10.0f %12s %12s %10s\n", m, n, d, n / d, "-", "-", "-";
        else printf "%-12s %8d %10.2f %10.0f %12.2f %12.0f %10.2f\n", m, n, d, n / d, t, n / t, d / t }'
}
row lenet5 "-e 1 -c 0" lenet5 1
row cnn "-e 0 -c $fraction -a cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10" cnn "$fraction"
row resnet "-e 0 -c $fraction -a resnet" resnet "$fraction"
row mobilenetv2 "-e 0 -c $fraction -a mobilenetv2" mobilenetv2 "$fraction"
if nvidia-smi -L > /dev/null 2>&1; then
    echo "== on the GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
    row lenet5 "-e 1 -c 0" lenet5 1 cuda
    row cnn "-e 0 -c 1 -a cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10" cnn 1 cuda
    row resnet "-e 0 -c 1 -a resnet" resnet 1 cuda
    row mobilenetv2 "-e 0 -c 1 -a mobilenetv2" mobilenetv2 1 cuda
else
    echo "GPU: SKIP (no NVIDIA GPU or driver here)"
fi
echo "dcz/torch: the ratio of times (below 1: dcz is faster)"
