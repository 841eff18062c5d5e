#!/usr/bin/env bash
# fmnist-subset.sh DIR NTRAIN NTEST: the first NTRAIN training and NTEST
# test images of Debian's dataset-fashion-mnist, with their labels, as
# gzipped IDX files in DIR (their counts set), the data the tests train on
# in seconds (tests/scalar.sh, scripts/mcu-models.sh, tests/cli/lib.bash).
set -eu
dir=$1 ntrain=$2 ntest=$3
fm=/usr/share/datasets/fashion-mnist
mkdir -p "$dir"
# the first N items of an IDX file, its count set to N
idx() { # SRC DST N ITEM_BYTES
    local count
    count=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($3 >> 24 & 255)) $(($3 >> 16 & 255)) $(($3 >> 8 & 255)) $(($3 & 255)))
    { printf "$(gzip -dc "$1" | head -c 4 | od -An -tx1 | sed 's/ /\\x/g')"; printf "$count"
      gzip -dc "$1" | tail -c +9 | head -c $(( ($4 > 1 ? 8 : 0) + $3 * $4 )); } | gzip -1 > "$2"
}
idx $fm/train-images-idx3-ubyte.gz "$dir/train-images-idx3-ubyte.gz" "$ntrain" 784
idx $fm/train-labels-idx1-ubyte.gz "$dir/train-labels-idx1-ubyte.gz" "$ntrain" 1
idx $fm/t10k-images-idx3-ubyte.gz "$dir/t10k-images-idx3-ubyte.gz" "$ntest" 784
idx $fm/t10k-labels-idx1-ubyte.gz "$dir/t10k-labels-idx1-ubyte.gz" "$ntest" 1
