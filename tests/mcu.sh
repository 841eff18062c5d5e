#!/usr/bin/env bash
# mcu.sh: libdcz on a microcontroller (make test-mcu). Builds libdcz for a
# Cortex-M4 (make mcu) and the firmware of samples/mcu/ with an int8 LeNet-
# 300-100 and an int8 small CNN, each trained, compressed and calibrated
# here on 600 Fashion-MNIST images (scripts/mcu-models.sh), runs each on 20
# test images under
# qemu-system-arm (mps2-an386, semihosting) and compares every output, as
# the bits of its float, with what the host's libdcz gives for the same
# file and images (dcz run): any difference fails, listing the first ones;
# the comparison is itself checked once, on a host output changed by one
# bit. LeNet-300-100 runs in a 64 KiB arena and 128 KiB of flash, as a
# small microcontroller has them (its compressed weights stay in flash:
# dcz_options.stream_weights); the CNN, whose activations take more, in
# the arena it asks for. Prints SKIP, with the reason, without the cross
# toolchain or QEMU.
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
make --no-print-directory mcu > "$tmp/lib.log" 2>&1 || { tail -n 20 "$tmp/lib.log"; echo "FAIL make mcu"; echo "0 passed, 1 failed"; exit 1; }
bash scripts/mcu-models.sh "$tmp" || { echo "FAIL making the models"; echo "0 passed, 1 failed"; exit 1; }
d=$tmp/data
passed=0 failed=0
# each model (scripts/mcu-models.sh): its arena and the RAM around it
for spec in lenet300:65536:131072 cnn:163840:196608; do
    name=${spec%%:*}
    arena=${spec%:*}; arena=${arena##*:}
    ram=${spec##*:}
    m=$tmp/$name
    # the host: the same file through libdcz's integer path, outputs as bits
    bin/dcz run "$m.dcz" --data "$d" --count 20 -q -o "$m-host.f32" > /dev/null &&
        outs=$(( $(stat -c %s "$m-host.f32") / 4 / 20 )) &&
        od -An -tx4 -v -w$((4 * outs)) "$m-host.f32" | sed 's/^ *//' | awk '{ print "sample " NR - 1 ": " $0 }' > "$m-want" ||
        { echo "FAIL dcz run $name"; failed=$((failed + 1)); continue; }
    # the board: the arena the model needs (it prints it), within QEMU's RAM
    if ! make --no-print-directory -s -C samples/mcu MODEL="$m.dcz" SAMPLES="$tmp/samples.u8" OUT="$m.elf" \
            ARENA_BYTES=$arena RAM_BYTES=$ram > "$m-build.log" 2>&1; then
        echo "FAIL building the firmware for $name:"; tail -n 10 "$m-build.log"; failed=$((failed + 1)); continue
    fi
    make --no-print-directory -s -C samples/mcu size MODEL="$m.dcz" SAMPLES="$tmp/samples.u8" OUT="$m.elf" \
        ARENA_BYTES=$arena
    timeout 120 qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel "$m.elf" > "$m-board" 2>&1
    rc=$?
    sed -n 's/^\(sample [0-9]*:\) [0-9]* /\1 /p' "$m-board" > "$m-got"
    n=$(wc -l < "$m-want")
    diff "$m-want" "$m-got" > "$m-diff"
    # the comparison sees a one-bit change of one output
    read -r w0 w1 h0 rest < "$m-want"
    { printf '%s %s %08x %s\n' "$w0" "$w1" $(( 16#$h0 ^ 1 )) "$rest"; tail -n +2 "$m-want"; } > "$m-want-changed"
    cmp -s "$m-want" "$m-want-changed" && { echo "FAIL the one-bit change of the comparison's check"; failed=$((failed + 1)); continue; }
    if [ $rc -eq 0 ] && [ "$n" -eq 20 ] && grep -q '^done 20 samples' "$m-board" && [ ! -s "$m-diff" ] &&
       ! diff -q "$m-want-changed" "$m-got" > /dev/null; then
        echo "ok   $name int8: 20 samples x $outs outputs on the Cortex-M4 (qemu) give the host's bits" \
             "($(head -n 1 "$m-board"), $(grep '^stack' "$m-board")); one output changed by a bit is seen"
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
