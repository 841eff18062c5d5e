#!/usr/bin/env bash
# mcu.sh: libdcz on a microcontroller (make test-mcu). Builds libdcz for a
# Cortex-M4 (make mcu) and the firmware of samples/mcu/ with an int8 LeNet-
# 300-100 and an int8 small CNN, each trained, compressed and calibrated
# here on 600 Fashion-MNIST images, runs each on 20 test images under
# qemu-system-arm (mps2-an386, semihosting) and compares every output, as
# the bits of its float, with what the host's libdcz gives for the same
# file and images (dcz run): any difference fails, listing the first ones.
# Prints SKIP, with the reason, without the cross toolchain or QEMU.
set -u
cd "$(dirname "$0")/.."
skip() { echo "SKIP test-mcu: $*"; echo "0 passed, 0 failed"; exit 0; }
command -v arm-none-eabi-gcc > /dev/null 2>&1 || skip "no arm-none-eabi-gcc (Debian: gcc-arm-none-eabi)"
arm-none-eabi-gcc --specs=picolibc.specs -print-file-name=picolibc.specs 2> /dev/null | grep -q / ||
    skip "no picolibc for arm-none-eabi (Debian: picolibc-arm-none-eabi)"
command -v qemu-system-arm > /dev/null 2>&1 || skip "no qemu-system-arm (Debian: qemu-system-arm)"
fm=/usr/share/datasets/fashion-mnist
[ -f $fm/t10k-images-idx3-ubyte.gz ] || skip "no $fm (Debian: dataset-fashion-mnist)"
[ -x bin/dcz ] || { echo "FAIL no bin/dcz (make)"; echo "0 passed, 1 failed"; exit 1; }
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/data; mkdir -p "$d"
# the first N items of an IDX file, their count set (as tests/scalar.sh)
idx() { # SRC DST COUNT(hex, 4 bytes) N ITEM_BYTES
    { printf "$(gzip -dc "$1" | head -c 4 | od -An -tx1 | sed 's/ /\\x/g')"; printf "$3"
      gzip -dc "$1" | tail -c +9 | head -c $(( ($5 > 1 ? 8 : 0) + $4 * $5 )); } | gzip -1 > "$2"
}
idx $fm/train-images-idx3-ubyte.gz "$d/train-images-idx3-ubyte.gz" '\x00\x00\x02\x58' 600 784
idx $fm/train-labels-idx1-ubyte.gz "$d/train-labels-idx1-ubyte.gz" '\x00\x00\x02\x58' 600 1
idx $fm/t10k-images-idx3-ubyte.gz "$d/t10k-images-idx3-ubyte.gz" '\x00\x00\x00\x14' 20 784
idx $fm/t10k-labels-idx1-ubyte.gz "$d/t10k-labels-idx1-ubyte.gz" '\x00\x00\x00\x14' 20 1
gzip -dc "$d/t10k-images-idx3-ubyte.gz" | tail -c +17 > "$tmp/samples.u8"   # 20 x 784 pixels

make --no-print-directory mcu > "$tmp/lib.log" 2>&1 || { tail -n 20 "$tmp/lib.log"; echo "FAIL make mcu"; echo "0 passed, 1 failed"; exit 1; }
passed=0 failed=0
for arch in lenet300 cnn:c8k3-p2-c16k3-p2-f10; do
    name=${arch%%:*}
    m=$tmp/$name
    if ! { bin/dcz train --arch "$arch" --epochs 1 --data "$d" --seed 3 --threads 2 -q -o "$m-dense.dcz" &&
           bin/dcz compress "$m-dense.dcz" --data "$d" --rounds 1 --prune-epochs 0 --final-epochs 1 --quant-epochs 1 \
               --seed 3 --threads 2 -q -o "$m-small.dcz" &&
           bin/dcz calibrate "$m-small.dcz" --data "$d" --scheme int8 -q -o "$m.dcz" > /dev/null; }; then
        echo "FAIL making the int8 $name"; failed=$((failed + 1)); continue
    fi
    # the host: the same file through libdcz's integer path, outputs as bits
    bin/dcz run "$m.dcz" --data "$d" --count 20 -q -o "$m-host.f32" > /dev/null &&
        outs=$(( $(stat -c %s "$m-host.f32") / 4 / 20 )) &&
        od -An -tx4 -v -w$((4 * outs)) "$m-host.f32" | sed 's/^ *//' | awk '{ print "sample " NR - 1 ": " $0 }' > "$m-want" ||
        { echo "FAIL dcz run $name"; failed=$((failed + 1)); continue; }
    # the board: the arena the model needs (it prints it), within QEMU's RAM
    if ! make --no-print-directory -s -C samples/mcu MODEL="$m.dcz" SAMPLES="$tmp/samples.u8" OUT="$m.elf" \
            ARENA_BYTES=${MCU_ARENA_BYTES:-65536} RAM_BYTES=${MCU_RAM_BYTES:-131072} > "$m-build.log" 2>&1; then
        echo "FAIL building the firmware for $name:"; tail -n 10 "$m-build.log"; failed=$((failed + 1)); continue
    fi
    make --no-print-directory -s -C samples/mcu size MODEL="$m.dcz" SAMPLES="$tmp/samples.u8" OUT="$m.elf" \
        ARENA_BYTES=${MCU_ARENA_BYTES:-65536}
    timeout 120 qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel "$m.elf" > "$m-board" 2>&1
    rc=$?
    sed -n 's/^\(sample [0-9]*:\) [0-9]* /\1 /p' "$m-board" > "$m-got"
    n=$(wc -l < "$m-want")
    diff "$m-want" "$m-got" > "$m-diff"
    if [ $rc -eq 0 ] && [ "$n" -eq 20 ] && grep -q '^done 20 samples' "$m-board" && [ ! -s "$m-diff" ]; then
        echo "ok   $name int8: 20 samples x $outs outputs on the Cortex-M4 (qemu) give the host's bits ($(head -n 1 "$m-board"))"
        passed=$((passed + 1))
    else
        echo "FAIL $name int8: the Cortex-M4's outputs differ from the host's (qemu exit $rc); host < > board:"
        head -n 5 "$m-board" | grep -v '^sample' | sed 's/^/    board: /'
        head -n 12 "$m-diff"
        failed=$((failed + 1))
    fi
done
echo "test-mcu: $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
