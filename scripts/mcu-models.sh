#!/usr/bin/env bash
# mcu-models.sh DIR: what the microcontroller firmware of samples/mcu/ runs
# in make test-mcu and make size: in DIR, 600 Fashion-MNIST training images
# and the first 20 test images (data/, IDX), those 20 as raw 28 x 28 bytes
# one after the other (samples.u8), and two int8 models trained, compressed
# and calibrated on the 600 (seed 3): lenet300.dcz (LeNet-300-100) and
# cnn.dcz (c8k3-p2-c16k3-p2-f10). Needs bin/dcz and Debian's
# dataset-fashion-mnist; says which step failed, and exits 1, otherwise.
set -u
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/mcu-models.sh DIR}
d=$dir/data
bash scripts/fmnist-subset.sh "$d" 600 20 || { echo "mcu-models.sh: no Fashion-MNIST subset" >&2; exit 1; }
gzip -dc "$d/t10k-images-idx3-ubyte.gz" | tail -c +17 > "$dir/samples.u8"   # 20 x 784 pixels
for arch in lenet300 cnn:c8k3-p2-c16k3-p2-f10; do
    m=$dir/${arch%%:*}
    bin/dcz train --arch "$arch" --epochs 1 --data "$d" --seed 3 --threads 2 -q -o "$m-dense.dcz" &&
        bin/dcz compress "$m-dense.dcz" --data "$d" --rounds 1 --prune-epochs 0 --final-epochs 1 --quant-epochs 1 \
            --seed 3 --threads 2 -q -o "$m-small.dcz" &&
        bin/dcz calibrate "$m-small.dcz" --data "$d" --scheme int8 -q -o "$m.dcz" > /dev/null ||
        { echo "mcu-models.sh: making the int8 ${arch%%:*} failed" >&2; exit 1; }
done
