#!/usr/bin/env bash
# Exit codes and messages for bad arguments, missing and corrupt files,
# unwritable outputs and an absent device (docs/CLI.md, "Exit codes").
source "$(dirname "$0")/lib.bash"
expect 1 "$DCZ"
expect 1 "$DCZ" frobnicate
expect 0 "$DCZ" --version
grep -q '^dcz [0-9]' "$T/out" || fail "--version output"
expect 0 "$DCZ" --help
for verb in train prune quantize encode compress eval info run; do
    expect 0 "$DCZ" "$verb" --help
    grep -q '^usage: dcz' "$T/out" || fail "$verb --help shows no usage"
done
expect 1 "$DCZ" info
expect 1 "$DCZ" info a b
expect 1 "$DCZ" prune x.dcz --no-such-option -o y.dcz
expect 1 "$DCZ" prune x.dcz --sparsity abc -o y.dcz
expect 1 "$DCZ" train --arch lenet300 --data fashion-mnist --epochs many -o y.dcz
expect 1 "$DCZ" train --arch nonsense --data fashion-mnist -o "$T/y.dcz"
expect 2 "$DCZ" info "$T/missing.dcz"
grep -q 'missing.dcz' "$T/err" || fail "the message names the missing file"
printf 'not a model at all' > "$T/junk.dcz"
expect 2 "$DCZ" info "$T/junk.dcz"
expect 2 "$DCZ" eval "$T/junk.dcz" --data fashion-mnist
expect 2 "$DCZ" train --arch lenet300 --data "$T/no-such-dir" -o "$T/y.dcz"
for verb in prune quantize encode; do expect 2 "$DCZ" $verb "$T/missing.dcz" -o "$T/y.dcz"; done
expect 2 "$DCZ" compress "$T/missing.dcz" --data fashion-mnist -o "$T/y.dcz"
expect 2 "$DCZ" run "$T" --data fashion-mnist
# a real model, damaged in its middle
"$DCZ" train --arch mlp:784-16-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"
size=$(stat -c %s "$T/m.dcz")
cp "$T/m.dcz" "$T/bad.dcz"
printf '\x55' | dd of="$T/bad.dcz" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect 2 "$DCZ" info "$T/bad.dcz"
grep -qi 'checksum\|damaged' "$T/err" || fail "corruption message: $(cat "$T/err")"
head -c $((size - 10)) "$T/m.dcz" > "$T/short.dcz"
expect 2 "$DCZ" eval "$T/short.dcz" --data fashion-mnist
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity 'nolayer=0.5' -o "$T/p.dcz"
expect 1 "$DCZ" encode "$T/m.dcz" --gap-bits 'nolayer=6' -o "$T/p.dcz"
expect 1 "$DCZ" compress "$T/m.dcz" --data fashion-mnist --bits 'nolayer=4' -o "$T/p.dcz"
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity 0.5 --device bogus -o "$T/p.dcz"
[ ! -s "$T/out" ] && ! grep -q threshold "$T/err" || fail "--device was checked after pruning"
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity 1.5 -o "$T/p.dcz"
expect 1 "$DCZ" prune "$T/m.dcz"
expect 3 "$DCZ" prune "$T/m.dcz" --sparsity 0.5 -o /nonexistent-dir/p.dcz
expect 4 "$DCZ" eval "$T/m.dcz" --data fashion-mnist --device gpu
# the verbs that retrain on the GPU say so before reading data, and write nothing
for verb in train compress prune quantize; do
    expect 4 "$DCZ" "$verb" "$T/m.dcz" --data fashion-mnist --device gpu -o "$T/g.dcz"
    grep -q -- '--device gpu' "$T/err" && ! grep -q 'epoch\|round\|accuracy' "$T/err" && [ ! -e "$T/g.dcz" ] ||
        fail "$verb --device gpu without a GPU: $(cat "$T/err")"
done
# where no NVIDIA driver is installed (no libcuda), the message says so
if "$DCZ" --version | grep -q 'CUDA backend: built' &&
    ! { PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; }; then
    grep -q 'no NVIDIA GPU or driver found' "$T/err" || fail "--device gpu without a driver: $(cat "$T/err")"
fi
expect 1 "$DCZ" eval "$T/m.dcz" --data fashion-mnist --device tpu
[ ! -e "$T/p.dcz" ] || fail "a failed run left an output"
expect 1 "$DCZ" prune "$T/m.dcz" --sparsity 0.9 --quality 1.0 -o "$T/p.dcz"
grep -q 'both a --sparsity and a --quality rule' "$T/err" || fail "sparsity and quality: $(cat "$T/err")"
expect 1 "$DCZ" run "$T/m.dcz" --data fashion-mnist --index -1
grep -q -- '--index must be >= 0' "$T/err" || fail "--index -1: $(cat "$T/err")"
expect 0 "$DCZ" help prune
grep -q '^usage: dcz prune' "$T/out" || fail "dcz help prune: $(head -n 2 "$T/out")"
"$DCZ" --version | grep -q 'kernels on this machine' || fail "--version names no kernels"
# binary data is not written to a terminal
if command -v script > /dev/null 2>&1; then
    script -qec "'$DCZ' prune '$T/m.dcz' --sparsity 0.5 -o -" /dev/null > "$T/tty" 2>&1
    grep -q 'standard output is a terminal' "$T/tty" || fail "-o - to a terminal: $(head -c 300 "$T/tty")"
else
    echo "SKIP -o - to a terminal: script not found"
fi
echo "exit codes ok"
