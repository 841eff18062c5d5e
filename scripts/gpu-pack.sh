#!/usr/bin/env bash
# gpu-pack.sh DIR: packs into DIR what scripts/gpu-check.sh runs on a GPU
# machine that has the NVIDIA driver, the CUDA toolkit and PyTorch but
# none of this machine's Debian libraries (a CUDA container image, say),
# so that the binaries built here with make CUDA=1 run there unchanged:
#   bin.tar.xz   bin/dcz, build/tests/test_gpu and test_gpu_train,
#                build/bench/bench_gpu and bench_train, stripped (their
#                device code stays);
#   libs.tar.xz  every shared library those need but the C and C++
#                runtimes, zlib and CUDA's own libraries (which that
#                machine has: env.sh finds them);
#   mpi.tar.xz   Open MPI's mpirun with its plugins, help files and
#                libraries, which runs from wherever it is unpacked
#                (OPAL_PREFIX);
#   data/        Fashion-MNIST's IDX files;
#   env.sh       sourced there from the checkout: unpacks the rest in
#                place and sets PATH, LD_LIBRARY_PATH (python3 runs
#                without it) and Open MPI's prefix, and says where each
#                library the binaries need was found.
# On the GPU machine, from a checkout of the same commit:
#   source DIR/env.sh && DATA=DIR/data BUILD=0 bash scripts/gpu-check.sh
set -eu
[ $# -eq 1 ] || { echo "usage: scripts/gpu-pack.sh DIR" >&2; exit 2; }
# DIR as given (from where the script is called), made anew: refused
# unless it is empty, missing, or an earlier pack (it has env.sh)
out=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "gpu-pack: cannot make $1" >&2; exit 1; }
if [ -n "$(ls -A "$out")" ] && [ ! -f "$out/env.sh" ]; then
    echo "gpu-pack: $1 holds other files; give an empty or new folder (or an earlier pack)" >&2
    exit 1
fi
cd "$(dirname "$0")/.."
case "$PWD/" in "$out"/*) echo "gpu-pack: $1 holds the checkout" >&2; exit 1 ;; esac
bins="bin/dcz build/tests/test_gpu build/tests/test_gpu_train build/bench/bench_gpu build/bench/bench_train"
for b in $bins; do
    [ -x "$b" ] || { echo "gpu-pack: $b is not built: run make CUDA=1 bin/dcz tests-build bench first" >&2; exit 1; }
done
./bin/dcz --version | grep -q '^CUDA backend: built' ||
    { echo "gpu-pack: bin/dcz was built without the CUDA backend: rebuild with make CUDA=1" >&2; exit 1; }
fm=/usr/share/datasets/fashion-mnist
[ -d "$fm" ] || { echo "gpu-pack: no $fm (Debian: dataset-fashion-mnist)" >&2; exit 1; }
command -v orterun > /dev/null || { echo "gpu-pack: no orterun (Debian: openmpi-bin)" >&2; exit 1; }

rm -rf "$out" && mkdir -p "$out/data"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

# the binaries, stripped, at their paths in the checkout
for b in $bins; do mkdir -p "$tmp/bin/$(dirname "$b")" && strip -o "$tmp/bin/$b" "$b"; done
tar -C "$tmp/bin" -cJf "$out/bin.tar.xz" .

# every library ldd resolves for FILES that the GPU machine is taken to
# have is left out: the C library's, the C++ and GCC runtimes, zlib, and
# CUDA's (cudart, cuBLAS, cuSPARSE, NCCL, nvJitLink)
system='^(ld-linux.*|linux-vdso.*|lib(c|m|dl|pthread|rt|resolv|util|stdc\+\+|gcc_s|z|atomic)\.so.*|libcu(dart|blas|blasLt|sparse)\.so.*|libnccl.*|libnvJitLink.*)$'
needed() { ldd "$@" 2> /dev/null | awk '$3 ~ /^\// { print $1, $3 }' | sort -u | grep -Ev "$system" || true; }
# copies the libraries FILES need into DIR, until nothing new is needed
# (a plugin's libraries, then theirs)
closure() { # DIR FILES...
    local dir=$1 n p new=1; shift
    mkdir -p "$dir"
    while [ $new = 1 ]; do
        new=0
        while read -r n p; do
            if [ -n "$n" ] && [ ! -e "$dir/$n" ]; then
                cp -L "$p" "$dir/$n" || { echo "gpu-pack: cannot copy $p" >&2; exit 1; }
                new=1
            fi
        done < <(needed "$@" $(find "$dir" -name '*.so*' -type f))
    done
}
closure "$tmp/libs" $bins
tar -C "$tmp/libs" -cJf "$out/libs.tar.xz" .

# Open MPI as Debian installs it (prefix /usr), moved under one folder:
# mpirun and orted, the libraries, the MCA and PMIx plugins and the help
# files, and every library those need that libs.tar.xz lacks
m=$tmp/mpi/usr ml=$tmp/mpi/usr/lib/x86_64-linux-gnu
mkdir -p "$m/bin" "$ml" "$m/share"
cp -L "$(command -v orterun)" "$(command -v orted)" "$m/bin/" && ln -s orterun "$m/bin/mpirun"
cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$ml/"
rm -rf "$ml/openmpi/include" "$ml/pmix2/include"
cp -a /usr/share/openmpi "$m/share/"
# the openmpi/lib links point two folders up, at the libraries themselves
for f in /usr/lib/x86_64-linux-gnu/openmpi/lib/*.so; do cp -L "$f" "$ml/$(basename "$(readlink "$f")")"; done
closure "$ml" "$m/bin/orterun" "$m/bin/orted" $(find "$ml" -name '*.so*' -type f)
for f in "$tmp"/libs/*; do rm -f "$ml/$(basename "$f")"; done
tar -C "$tmp/mpi" -cJf "$out/mpi.tar.xz" .

cp "$fm"/*.gz "$out/data/"

cat > "$out/env.sh" << 'EOF'
# source'd from the checkout on the GPU machine (scripts/gpu-pack.sh)
pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# DIR ARCHIVE: ARCHIVE unpacked into DIR (by Python where xz is missing)
unpack() {
    if command -v xz > /dev/null; then tar -C "$1" -xJf "$2"
    else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[2]).extractall(sys.argv[1])' "$1" "$2"; fi
}
mkdir -p "$pack/libs" "$pack/mpi" "$pack/pybin"
unpack . "$pack/bin.tar.xz"
unpack "$pack/libs" "$pack/libs.tar.xz"
unpack "$pack/mpi" "$pack/mpi.tar.xz"
# python3 (PyTorch's) runs without the packed libraries (found without
# this wrapper, should env.sh be sourced again)
py=$(PATH=$(echo "$PATH" | tr ':' '\n' | grep -vx "$pack/pybin" | paste -sd: -) command -v python3) && printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec %s "$@"\n' "$py" > "$pack/pybin/python3" &&
    chmod +x "$pack/pybin/python3"
export LD_LIBRARY_PATH=$pack/libs:$pack/mpi/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$pack/pybin:$pack/mpi/usr/bin:$PATH
export OPAL_PREFIX=$pack/mpi/usr PMIX_INSTALL_PREFIX=$pack/mpi/usr/lib/x86_64-linux-gnu/pmix2
export PMIX_MCA_pcompress_base_silence_warning=1
# CUDA's libraries where the binaries' run path does not find them
for lib in $(ldd bin/dcz build/bench/bench_gpu 2> /dev/null | awk '/not found/ { print $1 }' | sort -u); do
    f=$(find /usr/local /opt /usr/lib -name "$lib" 2> /dev/null | head -n 1)
    if [ -n "$f" ]; then
        echo "gpu-pack env: $lib from $(dirname "$f")"
        export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$f")
    else
        echo "gpu-pack env: $lib not found"
    fi
done
if ldd bin/dcz build/bench/bench_gpu | grep 'not found'; then echo "gpu-pack env: libraries missing (above)"; fi
EOF
du -sh "$out"/* | sed 's/^/gpu-pack: /'
