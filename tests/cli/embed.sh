#!/usr/bin/env bash
# embed: samples/embed builds against the freshly built lib/libdcz.a and
# classifies Fashion-MNIST test images, given as raw bytes and as PGM, into
# the top class `dcz run` gives, for a float model (weights used in place)
# and its int8 calibration; malformed images are refused cleanly (exit 2),
# and one of another kind (a JPEG, a PNG) is named with how to convert it.
source "$(dirname "$0")/lib.bash"
D=fashion-mnist
IDX=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
[ -f "$IDX" ] || fail "no $IDX (Debian: dataset-fashion-mnist)"
# warnings are errors; a library built with SANITIZE= needs its sanitizers
cflags="-std=c11 -O2 -Wall -Wextra -Werror"
san=""
nm "$ROOT/lib/libdcz.a" 2> /dev/null | grep -q ' U __asan_' && san="$san,address"
nm "$ROOT/lib/libdcz.a" 2> /dev/null | grep -q ' U __ubsan_' && san="$san,undefined"
[ -n "$san" ] && cflags="$cflags -fsanitize=${san#,}"
make -s -C "$ROOT/samples/embed" DCZ_ROOT="$ROOT" BIN="$T/classify" CFLAGS="$cflags" > "$T/build.txt" 2>&1 ||
    fail "building the sample: $(cat "$T/build.txt")"
C="$T/classify"
"$DCZ" train --arch mlp:784-32-10 --epochs 1 --data $D --seed 5 --threads 2 -q -o "$T/m.dcz" ||
    fail "train"
"$DCZ" calibrate "$T/m.dcz" --data $D --calib-batches 2 -q -o "$T/q.dcz" > /dev/null || fail "calibrate"

gzip -dc "$IDX" | head -c $((16 + 40 * 784)) > "$T/images" # the first 40 test images
image() { tail -c +$((16 + $1 * 784 + 1)) "$T/images" | head -c 784; }
# top class of `dcz run` for test image I, and of the sample for a file
dcz_top() { "$DCZ" run "$1" --data $D --index "$2" --top 1 | sed -n 's/^sample [0-9]* ([^)]*): \([0-9]*\) .*/\1/p'; }
sample_top() { "$C" "$1" "$2" | sed -n 's/^class \([0-9]*\) .*/\1/p'; }

for model in m q; do
    for i in 0 17 39; do
        image $i > "$T/img.raw"
        { printf 'P5\n# test image %d\n28 28\n255\n' $i; cat "$T/img.raw"; } > "$T/img.pgm"
        want=$(dcz_top "$T/$model.dcz" $i)
        [ -n "$want" ] || fail "dcz run $model.dcz --index $i gave no class"
        got=$(sample_top "$T/$model.dcz" "$T/img.raw")
        [ "$got" = "$want" ] || fail "$model.dcz image $i raw: sample says '$got', dcz run $want"
        got=$(sample_top "$T/$model.dcz" "$T/img.pgm")
        [ "$got" = "$want" ] || fail "$model.dcz image $i PGM: sample says '$got', dcz run $want"
    done
done

# the arena figure samples/embed/README.md quotes for this 784-32-10 MLP is
# what the sample prints (the arena depends on the architecture and on the
# CPU's vector dense product, which holds the weights transposed, never on
# the weights' values)
image 0 > "$T/img.raw"
quoted=$(sed -n 's/.*arena \([0-9]*\) of [0-9]* bytes.*/\1/p' "$ROOT/samples/embed/README.md" | head -n 1)
arena=$("$C" "$T/m.dcz" "$T/img.raw" | sed -n 's/.*arena \([0-9]*\) of .*/\1/p')
[ -n "$quoted" ] && [ -n "$arena" ] || fail "no arena figure: README '$quoted', sample '$arena'"
if "$DCZ" info "$T/m.dcz" | grep -q 'dense_gemm_f32'; then   # the weights transposed: the figure quoted
    [ "$arena" = "$quoted" ] || fail "samples/embed/README.md quotes an arena of $quoted bytes, the sample needs $arena"
    grep -q "takes $quoted bytes of arena" "$ROOT/samples/embed/README.md" ||
        fail "samples/embed/README.md's sentence does not quote $quoted bytes"
else   # no vector dense product: less than the figure by the transposed weights
    [ "$arena" -lt "$quoted" ] || fail "an arena of $arena bytes without the transposed weights, not below $quoted"
fi

# bad images: exit 2 with a message, never a crash
image 0 > "$T/img.raw"
bad() { # NAME: $T/bad holds the image
    "$C" "$T/m.dcz" "$T/bad" > "$T/out" 2> "$T/err"
    local rc=$?
    [ $rc -eq 2 ] && [ -s "$T/err" ] || fail "$1: exit $rc, stderr '$(cat "$T/err")'"
}
head -c 783 "$T/img.raw" > "$T/bad"; bad "783 raw bytes"
{ printf 'P5\n28 28\n255\n'; head -c 700 "$T/img.raw"; } > "$T/bad"; bad "short PGM"
{ printf 'P5\n28 28\n255\n'; cat "$T/img.raw"; printf x; } > "$T/bad"; bad "PGM with trailing bytes"
{ printf 'P5\n27 29\n255\n'; cat "$T/img.raw"; head -c 99 "$T/img.raw"; } > "$T/bad"; bad "27x29 PGM"
{ printf 'P5\n28 28\n65535\n'; cat "$T/img.raw" "$T/img.raw"; } > "$T/bad"; bad "16-bit PGM"
{ printf 'P5\n28 28\n0\n'; cat "$T/img.raw"; } > "$T/bad"; bad "maxval 0"
{ printf 'P5\n28 28\n99999999999999999999\n'; cat "$T/img.raw"; } > "$T/bad"; bad "huge maxval"
{ printf 'P5\n28'; } > "$T/bad"; bad "PGM header cut"
{ printf 'P2\n28 28\n255\n'; cat "$T/img.raw"; } > "$T/bad"; bad "ASCII PGM"
{ printf 'P5\n28 28\n100\n'; head -c 783 "$T/img.raw"; printf '\377'; } > "$T/bad"; bad "pixel above maxval"
: > "$T/bad"; bad "empty file"
head -c 5000 /dev/zero > "$T/bad"; bad "5000 zero bytes"
# an image of another kind, small or larger than any it reads, is named as
# such, with the sizes it takes and how to convert it
{ printf '\377\330\377\340'; head -c 6000 /dev/zero; } > "$T/photo.jpg"
"$C" "$T/m.dcz" "$T/photo.jpg" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'photo.jpg is a JPEG image' "$T/err" && grep -q '784 raw bytes or as a binary PGM' "$T/err" &&
    grep -q 'convert .*photo.jpg' "$T/err" || fail "a large JPEG: exit $rc, '$(cat "$T/err")'"
grep -q 'larger than' "$T/err" && fail "a large JPEG is refused for its size: $(cat "$T/err")"
{ printf '\211PNG\r\n\032\n'; head -c 300 /dev/zero; } > "$T/small.png"
"$C" "$T/m.dcz" "$T/small.png" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'small.png is a PNG image' "$T/err" || fail "a PNG: exit $rc, '$(cat "$T/err")'"
# a bad model is refused the same way
head -c 1000 "$T/m.dcz" > "$T/bad.dcz"
"$C" "$T/bad.dcz" "$T/img.raw" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'bad.dcz' "$T/err" || fail "truncated model: exit $rc, '$(cat "$T/err")'"
# comments and any whitespace in the header are fine
{ printf 'P5 #c\n#x\n 28\t28 # y\n255\r'; cat "$T/img.raw"; } > "$T/ok.pgm"
[ "$(sample_top "$T/m.dcz" "$T/ok.pgm")" = "$(sample_top "$T/m.dcz" "$T/img.raw")" ] ||
    fail "PGM with comments: $("$C" "$T/m.dcz" "$T/ok.pgm" 2>&1)"
exit 0
