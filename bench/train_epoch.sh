#!/usr/bin/env bash
# train_epoch.sh: the time of one LeNet-5 training epoch on Fashion-MNIST,
# dcz's engine (build/bench/bench_train) next to PyTorch (bench/torch_lenet5.py)
# on the same machine, in the same run, with the same thread count, batch,
# optimizer and data. PyTorch is Debian's python3-torch; without it the
# comparison is skipped with a note, and dcz's time is still printed.
#
#   bash bench/train_epoch.sh [THREADS]      (default: all cores)
set -u
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
bin=build/bench/bench_train
[ -x "$bin" ] || { echo "train_epoch: build $bin first (make bench)" >&2; exit 1; }

echo "== one LeNet-5 training epoch (60,000 samples, batch 64, SGD momentum 0.9), $threads threads"
dcz_out=$("$bin" -t "$threads" -e 1 -c 0) || { echo "$dcz_out"; exit 1; }
echo "$dcz_out"
if echo "$dcz_out" | grep -q SKIP; then exit 0; fi
dcz_s=$(echo "$dcz_out" | sed -n 's/.*epoch 1: [0-9]* samples in \([0-9.]*\) s.*/\1/p' | head -n 1)

# Debian's python3-torch belongs to Debian's interpreter, which another
# python3 earlier on PATH may hide; PYTHON overrides
py=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
torch_out=$("$py" bench/torch_lenet5.py "$threads" 2>&1)
rc=$?
if [ $rc -eq 3 ]; then
    echo "PyTorch: SKIP (python3-torch is not installed; apt-get install python3-torch to compare)"
    exit 0
elif [ $rc -ne 0 ]; then
    echo "PyTorch: failed: $torch_out"
    exit 0
fi
torch_s=$(echo "$torch_out" | sed -n 's/torch_epoch_seconds \([0-9.]*\).*/\1/p')
printf '%-28s %10s\n' "LeNet-5 epoch" "seconds"
printf '%-28s %10.2f\n' "dcz (im2col + OpenBLAS)" "$dcz_s"
printf '%-28s %10.2f\n' "PyTorch $("$py" -c 'import torch; print(torch.__version__)')" "$torch_s"
awk -v d="$dcz_s" -v t="$torch_s" 'BEGIN { printf "dcz / PyTorch time: %.2f (below 1: dcz is faster)\n", d / t }'
