#!/usr/bin/env bash
# mcu-size.sh: the Cortex-M4 figures of make size. Builds libdcz for the
# Cortex-M4 (make mcu) and the firmware of samples/mcu/ with the int8
# LeNet-300-100 of scripts/mcu-models.sh in a 64 KiB arena, runs it once
# under qemu-system-arm for the arena and stack it uses, and prints, from
# the link's map: libdcz's code, constants, data and bss as the firmware
# links them (--gc-sections: what the arena API reaches), and the
# firmware's flash (code, constants, the model, the 20 test samples) and
# RAM (data, the arena, the stack). Prints SKIP, with the reason, without
# the cross toolchain, picolibc or QEMU.
set -u
cd "$(dirname "$0")/.."
skip() { echo "Cortex-M4: SKIP ($*)"; exit 0; }
command -v arm-none-eabi-gcc > /dev/null 2>&1 || skip "no arm-none-eabi-gcc (Debian: gcc-arm-none-eabi)"
arm-none-eabi-gcc --specs=picolibc.specs -print-file-name=picolibc.specs 2> /dev/null | grep -q / ||
    skip "no picolibc for arm-none-eabi (Debian: picolibc-arm-none-eabi)"
command -v qemu-system-arm > /dev/null 2>&1 || skip "no qemu-system-arm (Debian: qemu-system-arm)"
[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ] || skip "no dataset-fashion-mnist"
[ -x bin/dcz ] || skip "no bin/dcz (make)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make --no-print-directory mcu > "$tmp/lib.log" 2>&1 || { cat "$tmp/lib.log"; echo "make mcu failed" >&2; exit 1; }
bash scripts/mcu-models.sh "$tmp" || exit 1
make --no-print-directory -s -C samples/mcu MODEL="$tmp/lenet300.dcz" SAMPLES="$tmp/samples.u8" OUT="$tmp/fw.elf" \
    > "$tmp/fw.log" 2>&1 || { cat "$tmp/fw.log"; echo "building the firmware failed" >&2; exit 1; }
timeout 120 qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel "$tmp/fw.elf" > "$tmp/board" 2>&1 ||
    { cat "$tmp/board"; echo "the firmware failed under qemu" >&2; exit 1; }
# the map's kept input sections, by owner (libdcz, the C library and
# libgcc, the firmware) and kind; the model and the samples by their symbols
awk '
function hex(s,   n, i) { n = 0; s = tolower(substr(s, 3)); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
/^Linker script and memory map/ { on = 1; next }
!on { next }
{
    if ($1 ~ /^\.(text|rodata|data|bss)/ && NF == 1) { pending = $1; next }
    sec = ""
    if ($1 ~ /^\.(text|rodata|data|bss)/ && NF >= 4) { sec = $1; size = $3; file = $4 }
    else if (pending != "" && $1 ~ /^0x/ && NF >= 3) { sec = $1 = pending; size = $2; file = $3 }
    pending = ""
    if (sec == "" || size !~ /^0x/) next
    kind = sec ~ /^\.text/ ? "code" : sec ~ /^\.rodata/ ? "const" : sec ~ /^\.data/ ? "data" : "bss"
    who = file ~ /libdcz\.a/ ? "dcz" : file ~ /lib(c|m|gcc|semihost)\.a|picolibc/ ? "libc" : "fw"
    t[who, kind] += hex(size)
}
END { printf "%d %d %d %d %d %d\n", t["dcz", "code"], t["dcz", "const"], t["dcz", "data"], t["dcz", "bss"],
      t["libc", "code"] + t["libc", "const"], t["libc", "data"] + t["libc", "bss"] }' "$tmp/fw.map" > "$tmp/sizes"
read -r code const data bss libc libc_ram < "$tmp/sizes"
sym() { arm-none-eabi-nm "$tmp/fw.elf" | awk -v s="$1" '$3 == s { print $1 }'; }
flash=$((16#$(sym __flash_used))) ram=$((16#$(sym __ram_used)))
model=$((16#$(sym model_end) - 16#$(sym model))) samples=$((16#$(sym samples_end) - 16#$(sym samples)))
arena=$(sed -n 's/^arena \([0-9]*\) of \([0-9]*\) bytes/\1 \2/p' "$tmp/board")
stack=$(sed -n 's/^stack \([0-9]*\) of \([0-9]*\) bytes/\1 \2/p' "$tmp/board")
cc=$(arm-none-eabi-gcc -dumpversion)
printf 'Cortex-M4 (make mcu: arm-none-eabi-gcc %s, picolibc, -Os, the references and the integer path):\n' "$cc"
printf '  libdcz as a firmware links it: %d bytes of text (%d code, %d constants), %d data, %d bss\n' \
    $((code + const)) "$code" "$const" "$data" "$bss"
printf '  int8 LeNet-300-100 firmware (samples/mcu): flash %d bytes (model %d, 20 test samples %d, libdcz %d, C library %d)\n' \
    "$flash" "$model" "$samples" $((code + const + data)) "$libc"
printf '    RAM %d bytes reserved: arena %s of %s used, stack %s of %s used, the rest data and bss\n' \
    "$ram" ${arena:-? ?} ${stack:-? ?}
