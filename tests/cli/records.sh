#!/usr/bin/env bash
# Stage records of any length: prune and quantize record a line per layer
# with weights, which once went into fixed buffers and were cut short on a
# large network (EfficientNet-B0's 82 layers); the file then failed its own
# size check (exit 5, "recording the file size"). A MobileNetV2-style net
# of 40 inverted residual blocks (121 layers with weights, over 6,000 bytes
# of per-layer lines) goes through prune, quantize, encode and compress:
# each exits 0, each file states its own size in its last record, and each
# prune and quantize record holds every layer's line, whole. The same for
# train with an --arch spec longer than its record's old 512 bytes.
source "$(dirname "$0")/lib.bash"
D=$(fmnist_part 12000 2000)   # a fifth of the training split, enough to learn from

# records FILE: the text of FILE's stage records, inflated from its STAGES
# section (docs/FORMAT.md); perl and its zlib module come with git
records() {
    perl -MCompress::Zlib -e '
        open my $f, "<:raw", $ARGV[0] or die "$ARGV[0]: $!"; local $/; my $b = <$f>;
        my $nsec = unpack "V", substr $b, 24, 4;
        for my $i (0 .. $nsec - 1) {
            my ($type, $flags, $off, $size) = unpack "V V Q< Q<", substr $b, 64 + 32 * $i, 24;
            next unless $type == 3;   # STAGES: count, a u64 size each, the text length, zlib
            my $n = unpack "V", substr $b, $off, 4;
            my $text = uncompress(substr $b, $off + 8 + 8 * $n, $size - 8 - 8 * $n);
            defined $text or die "$ARGV[0]: the STAGES text does not inflate";
            print $text;
        }' "$1" || fail "reading the records of $1"
}
# check_file FILE STAGES...: FILE's records are STAGES in order and the last
# states FILE's size; each prune and quantize record has one whole line per
# layer with weights, in the order of the layers
check_file() {
    local f=$1; shift
    "$DCZ" info "$f" --json > "$T/info.json" || fail "info $f"
    [ "$(jq -r '.stages | join(" ")' "$T/info.json")" = "$*" ] ||
        fail "$f: records $(jq -c .stages "$T/info.json"), expected $*"
    [ "$(jq '.stage_details[-1].file_bytes' "$T/info.json")" = "$(stat -c %s "$f")" ] ||
        fail "$f: its last record states $(jq '.stage_details[-1].file_bytes' "$T/info.json") bytes, the file has $(stat -c %s "$f")"
    jq -r '.layers[] | select(.weights != null) | .name' "$T/info.json" > "$T/names"
    records "$f" > "$T/records"
    local stage line
    for stage in prune quantize; do
        case " $* " in *" $stage "*) ;; *) continue ;; esac
        case $stage in
            prune) line=' = sparsity [0-9.]+ threshold -?[0-9.e+-]+$' ;;
            quantize) line=' = bits [0-9]+ rms [0-9.e+-]+$' ;;
        esac
        awk -v s="$stage" '/^stage = / { on = $3 == s } on && /^layer\./' "$T/records" > "$T/lines"
        grep -Evq "^layer\.[^ ]+$line" "$T/lines" && fail "$f: a $stage line cut short: $(grep -Ev "^layer\.[^ ]+$line" "$T/lines" | head -n 1)"
        sed 's/^layer\.\([^ ]*\) = .*/\1/' "$T/lines" | cmp -s - "$T/names" ||
            fail "$f: the $stage record names $(wc -l < "$T/lines") layers, the file has $(wc -l < "$T/names") with weights"
    done
    echo "ok: $(basename "$f"): records $*, $(wc -c < "$T/records") bytes of text"
}

spec=cnn:p28$(printf -- '-m2%.0s' $(seq 40))-f10
"$DCZ" train --arch "$spec" --epochs 0 --data $D --validation 0 --threads 1 -q -o "$T/deep.dcz" || fail "train $spec"
[ "$(jq '[.layers[] | select(.weights != null)] | length' <("$DCZ" info "$T/deep.dcz" --json))" = 121 ] ||
    fail "the net has not the 121 layers with weights this test is about"

expect 0 "$DCZ" prune "$T/deep.dcz" --sparsity 0.9 -q -o "$T/p.dcz"
check_file "$T/p.dcz" train prune
expect 0 "$DCZ" quantize "$T/p.dcz" -q -o "$T/q.dcz"
check_file "$T/q.dcz" train prune quantize
expect 0 "$DCZ" encode "$T/q.dcz" -q -o "$T/e.dcz"
check_file "$T/e.dcz" train prune quantize encode
mkdir "$T/c"
expect 0 "$DCZ" compress "$T/deep.dcz" --data $D --rounds 1 --prune-epochs 0 --final-epochs 0 --quant-epochs 0 \
    --threads 1 --keep-stages "$T/c" -q -o "$T/c.dcz"
check_file "$T/c/prune.dcz" train prune
check_file "$T/c/quantize.dcz" train prune quantize
check_file "$T/c.dcz" train prune quantize encode

# the train record's arch is whole too, for a spec longer than the 512 bytes
# its record once had (60 tokens of 11 bytes)
spec=cnn:$(printf 'c2k1s1p0g1-%.0s' $(seq 60))f10
expect 0 "$DCZ" train --arch "$spec" --epochs 0 --data $D --threads 1 -q -o "$T/long.dcz"
check_file "$T/long.dcz" train
records "$T/long.dcz" | grep -qxF "arch = $spec" || fail "the train record's arch is not the ${#spec}-byte spec"
