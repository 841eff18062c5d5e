#!/usr/bin/env bash
# Data is checked against the model before the first epoch: both splits of
# one shape, the images of the model's shape, one output per class when
# training from scratch; a message says what was found and what was
# expected. A PNG dataset laid out without train/ and test/ is named as such.
source "$(dirname "$0")/lib.bash"
PNG="$ROOT/tests/fixtures/png"
# three classes of Fashion-MNIST as PNG folders
"$ROOT/build/tests/idx2png" fashion-mnist "$T/p10" 20 5 || fail "idx2png"
mkdir -p "$T/p3/train" "$T/p3/test"
for c in 0-tshirt 1-trouser 2-pullover; do
    mv "$T/p10/train/$c" "$T/p3/train/"; mv "$T/p10/test/$c" "$T/p3/test/"
done

# as many outputs as classes when training from scratch
expect 2 "$DCZ" train --arch lenet300 --epochs 5 --data "$T/p3" -o "$T/x.dcz"
grep -q 'in 3 classes; the model takes 784 (784 values) and has 10 outputs: give the last layer one output per class' \
    "$T/err" || fail "classes against outputs: $(cat "$T/err")"
! grep -q epoch "$T/err" || fail "trained before checking the classes"
"$DCZ" train --arch mlp:784-16-3 --epochs 1 --data "$T/p3" -q -o "$T/m3.dcz" || fail "train on three classes"

# a model of more outputs than the data's classes: a note, not an error
"$DCZ" train --arch mlp:784-16-10 --epochs 1 --data fashion-mnist -q -o "$T/m10.dcz" || fail "train"
expect 0 "$DCZ" eval "$T/m10.dcz" --data "$T/p3"
grep -q 'has 3 classes and the model 10 outputs' "$T/err" || fail "no note on classes: $(cat "$T/err")"
# images of another shape than the model's
mkdir -p "$T/big/train/a" "$T/big/test/a"
cp "$PNG/img0_32x32.png" "$T/big/train/a/0.png"; cp "$PNG/img0_32x32.png" "$T/big/test/a/0.png"
expect 2 "$DCZ" prune "$T/m3.dcz" --sparsity 0.5 --data "$T/big" -o "$T/y.dcz"
grep -q 'holds 1x32x32 samples (1024 values) in 1 classes; the model takes 784 (784 values)' "$T/err" ||
    fail "image size against the model: $(cat "$T/err")"

# RGB train images, gray test images: refused before any epoch
mkdir -p "$T/mixed/train/a" "$T/mixed/train/b" "$T/mixed/test/a" "$T/mixed/test/b"
for c in a b; do
    cp "$PNG/colour_rgb.png" "$T/mixed/train/$c/0.png"; cp "$PNG/img0_rgb.png" "$T/mixed/train/$c/1.png"
    cp "$PNG/img0_gray8.png" "$T/mixed/test/$c/0.png"
done
expect 2 "$DCZ" train --arch cnn:i3x28x28-c4k3-gap-f2 --epochs 5 --data "$T/mixed" -o "$T/x.dcz"
grep -q 'the train split holds 3x28x28 samples (CxHxW) and the test split 1x28x28' "$T/err" ||
    fail "mixed splits: $(cat "$T/err")"
! grep -q epoch "$T/err" || fail "trained before checking the splits"

# class folders without train/ and test/
mkdir -p "$T/flat/shoe" "$T/flat/bag"
cp "$PNG/img0_gray8.png" "$T/flat/shoe/0.png"; cp "$PNG/img0_gray8.png" "$T/flat/bag/0.png"
expect 2 "$DCZ" eval "$T/m3.dcz" --data "$T/flat"
grep -q 'holds class folders of images but no train/ and test/ folders' "$T/err" ||
    fail "class folders: $(cat "$T/err")"
echo "data fit ok"
