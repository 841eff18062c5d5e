#!/usr/bin/env bash
# dcz info, where a file's bytes go, checked against a reading of the file
# done here (od and awk, not dcz's reader):
# - the bytes by part (header and table, graph, layers, stage records,
#   calibration, preprocessing, other sections, padding) equal those the
#   section table gives and sum to the file's size, on every .dcz of the fuzz
#   corpus and of the fixtures that dcz reads;
# - per kept weight, each stream's bits as stored are its block's bytes (read
#   here from the LAYER section) x 8 / kept; its entropy per kept weight is
#   that of the symbols unpacked here from a file of fixed-width streams,
#   or for positions coded as a keep mask that of its flags taken alone;
#   the positions' floor is H(p)/p computed here from the layer's weights
#   and kept counts;
# - the text report shows the tables, and a file without records says so.
source "$(dirname "$0")/lib.bash"

# dcz_read FILE: "parts HEADER GRAPH LAYERS STAGES CALIB PREP OTHER PADDING"
# from the section table, then for each LAYER section, in order, "layer NNZ
# N INDEX_BLOCK GAP_BLOCK INDEX_H GAP_H": the weight's stored count and
# elements, its stream blocks' bytes (the length field included; - when
# absent) and, for fixed-width streams, the entropy of their symbols in bits
# per kept weight (- when Huffman-coded or absent). docs/FORMAT.md is the
# layout.
dcz_read() {
    od -An -v -tu1 "$1" | tr -s ' ' '\n' | awk '
    NF { b[n++] = $1 }
    function u16(o) { return b[o] + 256 * b[o + 1] }
    function u32(o) { return u16(o) + 65536 * u16(o + 2) }
    function u64(o) { return u32(o) + 4294967296 * u32(o + 4) }
    # entropy of count symbols of width bits from byte at, per kept weight
    function raw_h(at, count, width, kept,    i, pos, v, k, f, h, p) {
        split("", f)
        for (i = 0; i < count; i++) {
            v = 0
            for (k = 0; k < width; k++) {
                pos = i * width + k
                v = v * 2 + int(b[at + int(pos / 8)] / 2 ^ (7 - pos % 8)) % 2
            }
            f[v]++
        }
        h = 0
        for (v in f) { p = f[v] / count; h -= p * log(p) / log(2) }
        return sprintf("%.12g", h * count / kept)
    }
    # entropy of a keep mask of n flags, nnz set, each taken alone, per kept weight
    function mask_h(nnz, n,    p) {
        p = nnz / n
        return sprintf("%.12g", p >= 1 ? 0 : (-p * log(p) - (1 - p) * log(1 - p)) / log(2) / p)
    }
    END {
        ns = u32(24); head = 64 + 32 * ns; end = head; pad = 0
        split("", part); other = 0
        for (i = 0; i < ns; i++) {
            e = 64 + 32 * i; type[i] = u32(e); off[i] = u64(e + 8); size = u64(e + 16)
            pad += off[i] - end; end = off[i] + size
            if (type[i] >= 1 && type[i] <= 5) part[type[i]] += size; else other += size
        }
        printf "parts %d %d %d %d %d %d %d %d\n", head, part[1], part[2], part[3], part[4], part[5], other, pad
        for (i = 0; i < ns; i++) {
            if (type[i] != 2) continue
            p = off[i] + 4; enc = u32(p); rank = u32(p + 4); p += 8; el = 1
            for (r = 0; r < rank; r++) { el *= u32(p); p += 4 }
            q = p + 4   # the payload
            ib = "-"; gb = "-"; ih = "-"; gh = "-"; nnz = el
            if (enc == 4 || enc == 5) {
                nnz = u32(q); gc = u32(q + 4); gbits = b[q + 8]; gcod = b[q + 9]
                if (enc == 5) {
                    ibits = b[q + 10]; icod = b[q + 11]; q += 16 + 4 * u16(q + 12)
                    ib = 4 + u32(q)
                    if (icod == 0 && nnz) ih = raw_h(q + 4, nnz, ibits, nnz)
                    q += ib
                } else {
                    q += 12 + 4 * nnz
                }
                if (gbits) {
                    gb = 4 + u32(q)
                    if (gcod == 0 && nnz) gh = raw_h(q + 4, gc, gbits, nnz)
                    if (gcod == 2 && nnz) gh = mask_h(nnz, el)
                }
            }
            print "layer", nnz, el, ib, gb, ih, gh
        }
    }'
}

# close A B: A and B (numbers, or both "-") agree to 1e-8 relative
close() {
    [ "$1" = - ] || [ "$2" = - ] && { [ "$1" = "$2" ]; return; }
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
                                     exit !(d <= 1e-8 * (m > 1 ? m : 1)) }'
}

# check_parts FILE: info's bytes by part against dcz_read's, summing to the size
check_parts() {
    local f=$1 size
    size=$(stat -c %s "$f")
    "$DCZ" info "$f" --json > "$T/i.json" || return 1
    local mine theirs
    mine=$(dcz_read "$f" | sed -n 's/^parts //p')
    theirs=$(jq -r '.bytes_by_part | "\(.header) \(.graph) \(.layers) \(.stages) \(.calibration) \(.preprocess) \(.other) \(.padding)"' "$T/i.json")
    [ "$mine" = "$theirs" ] || fail "$f: info's parts '$theirs', the section table's '$mine'"
    [ "$(echo $theirs | tr ' ' '\n' | awk '{ s += $1 } END { print s }')" = "$size" ] ||
        fail "$f: the parts $theirs do not sum to its $size bytes"
    [ "$(jq .file_bytes "$T/i.json")" = "$size" ] || fail "$f: file_bytes"
}

# check_streams FILE: each layer's per-kept-weight figures against dcz_read's
check_streams() {
    local f=$1
    "$DCZ" info "$f" --json > "$T/s.json" || fail "info $f"
    dcz_read "$f" | sed -n 's/^layer //p' > "$T/mine.txt"
    jq -r '.layers[] | select(.kept != null) | [.kept, .weights, .index_block_bytes, .gap_block_bytes,
        .index_stored_bits_per_kept, .gap_stored_bits_per_kept, .index_entropy_per_kept, .gap_entropy_per_kept,
        .gap_floor_per_kept, .name] | map(if . == null then "-" else tostring end) | join(" ")' "$T/s.json" \
        > "$T/theirs.txt"
    [ "$(wc -l < "$T/mine.txt")" = "$(wc -l < "$T/theirs.txt")" ] && [ -s "$T/mine.txt" ] ||
        fail "$f: $(wc -l < "$T/theirs.txt") layers in info, $(wc -l < "$T/mine.txt") LAYER sections"
    local sparse=0
    while read -r nnz n ib gb ih gh <&3 && read -r kept w jib jgb jis jgs jih jgh jfl name <&4; do
        [ "$nnz $n $ib $gb" = "$kept $w $jib $jgb" ] ||
            fail "$f $name: info says kept $kept of $w, blocks $jib $jgb; the file $nnz of $n, $ib $gb"
        [ "$ib" = - ] || close "$jis" "$(awk -v b="$ib" -v k="$nnz" 'BEGIN { printf "%.12g", b * 8 / k }')" ||
            fail "$f $name: index bits per kept weight $jis, block $ib bytes for $nnz"
        [ "$gb" = - ] || close "$jgs" "$(awk -v b="$gb" -v k="$nnz" 'BEGIN { printf "%.12g", b * 8 / k }')" ||
            fail "$f $name: position bits per kept weight $jgs, block $gb bytes for $nnz"
        [ "$ih" = - ] || close "$jih" "$ih" || fail "$f $name: index entropy per kept weight $jih, here $ih"
        [ "$gh" = - ] || close "$jgh" "$gh" || fail "$f $name: position entropy per kept weight $jgh, here $gh"
        if [ "$gb" != - ]; then
            local floor
            floor=$(awk -v k="$nnz" -v n="$n" 'BEGIN { p = k / n
                printf "%.12g", (p >= 1 ? 0 : (-p * log(p) - (1 - p) * log(1 - p)) / log(2) / p) }')
            close "$jfl" "$floor" || fail "$f $name: floor $jfl, H(p)/p of $nnz kept of $n is $floor"
            [ "$nnz" -lt "$n" ] && sparse=$((sparse + 1))
        fi
    done 3< "$T/mine.txt" 4< "$T/theirs.txt"
    echo "$sparse"
}

# every file of the corpus and the fixtures that dcz reads
checked=0
for f in "$ROOT"/tests/fuzz/corpus/dcz/* "$ROOT"/tests/fixtures/v1/*.dcz; do
    [ -f "$f" ] || continue
    "$DCZ" info "$f" > /dev/null 2>&1 || continue
    check_parts "$f" || fail "info $f"
    checked=$((checked + 1))
done
[ "$checked" -ge 20 ] || fail "only $checked files of the corpus and fixtures checked"

# LeNet-5 pruned and quantized (a fixture of format 1), encoded again: with
# Huffman-coded streams, and with fixed-width ones whose symbols are read here
L5="$ROOT/tests/fixtures/v1/lenet5-codebook.dcz"
"$DCZ" encode "$L5" -q -o "$T/l5.dcz" || fail "encode"
"$DCZ" encode "$L5" --no-huffman -q -o "$T/l5raw.dcz" || fail "encode --no-huffman"
"$DCZ" prune "$ROOT/tests/fixtures/v1/mlp-dense.dcz" --sparsity 'fc1=0.9,fc2=0.3' -q -o "$T/sp.dcz" || fail "prune"
for f in "$T/l5.dcz" "$T/sp.dcz" "$T/l5raw.dcz"; do
    check_parts "$f"
    sparse=$(check_streams "$f") || exit 1
    [ "$sparse" -ge 2 ] || fail "$f: $sparse sparse layers checked"
done
grep -q '"index_coding":"raw"' "$T/s.json" && grep -q '"gap_coding":"raw"' "$T/s.json" ||
    fail "the fixed-width file's streams are not raw"
# positions coded as a keep mask (arithmetic coding): bits as stored, the
# flags' entropy and the floor
AR="$ROOT/tests/fuzz/corpus/dcz/conv_net_a_arith.dcz"
sparse=$(check_streams "$AR") || exit 1
[ "$sparse" -ge 2 ] || fail "$AR: $sparse sparse layers checked"
grep -q '"gap_coding":"arith"' "$T/s.json" || fail "$AR: no position stream is arithmetic-coded"


# the text report: the tables and their notes
"$DCZ" info "$T/l5.dcz" > "$T/l5.txt" || fail "info text"
grep -Eq '^layer +kept +pos b/w +pos H b/w +floor b/w +to floor +idx b/w +idx H b/w +to bound$' "$T/l5.txt" ||
    fail "no bits-per-kept-weight table: $(cat "$T/l5.txt")"
grep -Eq '^fc1 +[0-9.]+% +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+% ' "$T/l5.txt" || fail "fc1's row: $(cat "$T/l5.txt")"
grep -q '^(bits per kept weight: b/w' "$T/l5.txt" || fail "no note under the table"
for p in 'header and table' graph 'layers (4 sections)' 'stage records' calibration preprocessing padding total; do
    grep -Eq "^$(printf '%s' "$p" | sed 's/[()]/\\&/g') +[0-9]+ +[0-9.]+%$" "$T/l5.txt" || fail "no '$p' row: $(cat "$T/l5.txt")"
done
grep -Eq "^total +$(stat -c %s "$T/l5.dcz") +100.00%$" "$T/l5.txt" || fail "total row"
grep -q '^no stage records' "$T/l5.txt" && fail "a file with records said to have none"
"$DCZ" encode "$L5" --strip -q -o "$T/bare.dcz" || fail "encode --strip"
"$DCZ" info "$T/bare.dcz" > "$T/bare.txt" || fail "info stripped"
grep -q '^no stage records: the file keeps no history' "$T/bare.txt" || fail "stripped: $(cat "$T/bare.txt")"
grep -Eq '^stage records +0 +0.00%$' "$T/bare.txt" || fail "stripped: the records' row"
echo "info ok: $checked files' parts, LeNet-5 and a pruned perceptron's streams"
