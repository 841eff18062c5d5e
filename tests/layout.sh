#!/usr/bin/env bash
# layout.sh: the dependency rules of the source tree (docs: runtime/README.md,
# runtime/tool.h), checked on every #include:
# - libdcz (runtime/) includes of the project only its own headers, the
#   public dcz.h, huffman/huffman.h and huffman/arith.h (the decoders it
#   links), never the toolchain's;
# - only runtime/cuda/ includes the CUDA headers;
# - huffman/ includes nothing of the project beyond itself and dcz.h;
# - the toolchain includes of runtime/ only the headers runtime/tool.h
#   names as meant for it (the list is read from tool.h itself, so the
#   header and this test cannot disagree);
# and on the built objects of libdcz's CPU runtime (BUILD, default build/:
# one per source of runtime/, runtime/format/ and runtime/cpu/, as the
# Makefile's LIB_SRC lists them), read by nm: no two of them call each
# other (an object that calls another defines nothing the other calls),
# so that the files of a kernel family and the loader's layer calls go one
# way. SKIP where an object is missing or older than its source, or nm is
# missing.
# and every kernel of runtime/cuda/ launched by dcz_gpu_launch, waiting for
# the kernel ahead of it before it touches an activation.
# Prints one line per breach and the closing "N passed, N failed".
#
#   tests/layout.sh [ROOT]
set -u
cd "${1:-$(dirname "$0")/..}"
passed=0 failed=0
check() {   # name, breaches (empty: pass)
    if [ -z "$2" ]; then
        echo "ok   $1"; passed=$((passed + 1))
    else
        echo "FAIL $1:"; echo "$2" | sed 's/^/    /'; failed=$((failed + 1))
    fi
}
# file:line:"header" for every quoted include of the files given
includes() {
    grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$@" 2>/dev/null |
        sed -E 's/^([^:]*):([0-9]+):.*"([^"]*)".*/\1:\2:\3/'
}
src() { find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) 2>/dev/null | sort; }

mapfile -t rt < <(src runtime)
check "runtime/ includes only runtime/, dcz.h, huffman/huffman.h and huffman/arith.h" \
    "$(includes "${rt[@]}" | awk -F: '$3 !~ /^runtime\// && $3 != "dcz.h" && $3 != "huffman/huffman.h" && $3 != "huffman/arith.h"')"

check "only runtime/cuda/ includes the CUDA headers" \
    "$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(cuda\|cublas\|cusparse\|nccl\)' "${rt[@]}" |
       grep -v '^runtime/cuda/')"

mapfile -t hf < <(src huffman)
check "huffman/ includes only huffman/ and dcz.h" "$(includes "${hf[@]}" | awk -F: '$3 !~ /^huffman\// && $3 != "dcz.h"')"

# the toolchain's headers of runtime/: the list in tool.h's opening comment
allowed=$(sed -n '1,/\*\//p' runtime/tool.h | grep -oE '^ \*   runtime/[a-z0-9_/]+\.h' | awk '{ print $2 }')
[ -n "$allowed" ] || check "runtime/tool.h names the headers meant for the toolchain" "none found"
mapfile -t tool < <(src calibrate cli interop model plot prune quantize steer train)
check "the toolchain includes of runtime/ only the headers tool.h names ($(echo $allowed | wc -w))" \
    "$(includes "${tool[@]}" | awk -F: -v ok="$allowed" '
        BEGIN { n = split(ok, a, /[ \n]+/); for (i = 1; i <= n; i++) allow[a[i]] = 1 }
        $3 ~ /^runtime\// && !($3 in allow)')"

# pairs of objects that call each other: A has an undefined symbol that B
# defines, and B one that A defines
build=${BUILD:-build}
mapfile -t objsrc < <(ls runtime/*.c runtime/format/*.c runtime/cpu/*.c runtime/cpu/*/*.c 2>/dev/null | sort)
stale=""
for s in "${objsrc[@]}"; do
    o=$build/${s%.c}.o
    if [ ! -f "$o" ] || [ "$s" -nt "$o" ]; then stale=$o; break; fi
done
# every CUDA kernel of libdcz is launched through dcz_gpu_launch, which lets
# it start before the kernel ahead of it ends, so each must wait for that
# kernel (dcz_gpu_begin or dcz_gpu_wait_prior) before its loop over outputs
# (gpu_kern.h): a kernel without the wait would read activations half written
check "CUDA kernels launched by dcz_gpu_launch alone, each waiting for the one before" \
    "$(grep -Hn '<<<' runtime/cuda/*.cu train/cuda/*.cu
       awk '/__global__/ { name = FILENAME ":" FNR; open = 1; waited = 0; next }
            open && /dcz_gpu_(begin|wait_prior)\(\)/ { waited = 1 }
            open && /^}/ { if (!waited) print name ": a kernel that never waits (dcz_gpu_begin)"; open = 0 }
           ' runtime/cuda/*.cu train/cuda/*.cu)"

if ! command -v nm > /dev/null 2>&1; then
    echo "SKIP no two objects of the CPU runtime call each other: nm not found"
elif [ ${#objsrc[@]} -eq 0 ] || [ -n "$stale" ]; then
    echo "SKIP no two objects of the CPU runtime call each other: ${stale:-no sources} missing or older than its source (make)"
else
    pairs=$(for s in "${objsrc[@]}"; do
                o=$build/${s%.c}.o
                nm "$o" | awk -v o="$o" '$1 == "U" { print o, "U", $2; next }
                                         NF >= 3 && $2 ~ /^[A-TV-Z]$/ { print o, "D", $3 }'
            done | awk '
        $2 == "D" { def[$3] = def[$3] " " $1; next }
        { und[++n] = $1; sym[n] = $3 }
        END {
            for (i = 1; i <= n; i++) {
                k = split(def[sym[i]], d, " ")
                for (j = 1; j <= k; j++)
                    if (d[j] != und[i] && !((und[i], d[j]) in calls)) calls[und[i], d[j]] = sym[i]
            }
            for (ab in calls) {
                split(ab, p, SUBSEP)
                if (p[1] < p[2] && ((p[2], p[1]) in calls))
                    print p[1] " <-> " p[2] ": " calls[p[1], p[2]] " | " calls[p[2], p[1]]
            }
        }' | sort)
    check "no two objects of the CPU runtime call each other (${#objsrc[@]})" "$pairs"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
