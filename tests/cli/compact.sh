#!/usr/bin/env bash
# encode --bias i8 --codebook f16 (format 2.2): the file is smaller by what
# the narrower biases and codebook entries save, dcz info names both
# formats, and it runs to within a point of the f32 file's accuracy; the
# values each option takes are checked before any work, and compress
# carries both into its encode stage.
source "$(dirname "$0")/lib.bash"
IN="$ROOT/tests/fixtures/v1/lenet5-codebook.dcz"
"$DCZ" encode "$IN" --strip --bias f32 --codebook f32 -q -o "$T/wide.dcz" || fail "encode f32"
"$DCZ" encode "$IN" --strip --bias i8 --codebook f16 -q -o "$T/small.dcz" || fail "encode i8 f16"
"$DCZ" info "$T/wide.dcz" --json > "$T/w.json" && "$DCZ" info "$T/small.dcz" --json > "$T/s.json" || fail "info"
wide=$(stat -c %s "$T/wide.dcz") small=$(stat -c %s "$T/small.dcz")
# LeNet-5's 580 biases: 3 bytes each at least, less the scales and the
# padding of four sections (the codebooks' 2 bytes an entry come on top)
[ $((wide - small)) -ge $((3 * 580 - 4 * 64)) ] || fail "saved only $((wide - small)) bytes ($wide -> $small)"
[ "$(grep -o '"bias_encoding":"int8"' "$T/s.json" | wc -l)" = 4 ] &&
    [ "$(grep -o '"codebook_format":"f16"' "$T/s.json" | wc -l)" = 4 ] &&
    [ "$(grep -o '"codebook_format":"f32"' "$T/w.json" | wc -l)" = 4 ] || fail "formats: $(cat "$T/s.json")"
a=$("$DCZ" eval "$T/wide.dcz" --data fashion-mnist --json | sed -n 's/.*"accuracy":\([0-9.]*\).*/\1/p')
b=$("$DCZ" eval "$T/small.dcz" --data fashion-mnist --json | sed -n 's/.*"accuracy":\([0-9.]*\).*/\1/p')
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0.3 && b > a - 0.01) }' || fail "accuracy $a -> $b"
for bad in "--bias i4" "--codebook f8" "--bias"; do
    expect 1 "$DCZ" encode "$IN" $bad -o "$T/x.dcz"
done
grep -q -- '--bias must be f32, f16 or i8' <("$DCZ" encode "$IN" --bias i4 -o "$T/x.dcz" 2>&1) || fail "bias message"
expect 1 "$DCZ" compress "$IN" --data fashion-mnist --codebook f64 -o "$T/x.dcz"
[ ! -e "$T/x.dcz" ] || fail "wrote an output for a refused option"
