#!/usr/bin/env bash
# deps.sh: makes sure the Debian packages dcz builds and tests with are
# installed. As root it installs what is missing with apt-get; otherwise it
# uses sudo when that works without a password prompt; failing both it
# prints the exact apt-get line to run and exits 1 (or, when only optional
# packages are missing, says which tests will SKIP and exits 0).
#
# It is quick when nothing is missing (one dpkg-query), so ./configure,
# make test, make demo, make bench and .ci/run all run it every time.
# apt-get's and dpkg's own output goes to a log (build/deps.log, or
# $DCZ_DEPS_LOG); the terminal gets one line per step, and the log's tail
# when a step fails.
#
# Packages, each for a reason (docs: README.md, "Dependencies"):
#   gcc make pkg-config libc6-dev   the build
#   zlib1g-dev            gzip-compressed IDX datasets
#   libpng-dev            PNG images
#   libjpeg62-turbo-dev   JPEG images (libjpeg-turbo's libjpeg API)
#   libcairo2-dev         figures (dcz plot): drawing and PNG encoding
#   libopenblas-dev       dense GEMM for training on CPU
#   dataset-fashion-mnist the data of the demo and of the data-driven tests
#   protobuf-c-compiler   generates the ONNX bindings (protoc-c) at build time
#   libprotobuf-c-dev     the protobuf-c runtime those bindings use
#   libonnx-dev           onnx.proto, the ONNX schema the bindings come from
#   jq                    the summary tables of the batch samples (samples/batch/)
# Optional (their tests SKIP without them):
#   gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#                         libdcz and its runtime tests built for and run on
#                         64-bit Arm (make test-aarch64, part of make test)
#   gcc-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm
#                         libdcz built for a Cortex-M4 and its firmware run
#                         on QEMU's mps2-an386 board (make test-mcu, part of
#                         make test; make mcu, samples/mcu/)
#   python3-onnx          onnx.checker on the files dcz export writes
#                         (tests/cli/interop.sh)
#   libopenmpi-dev openmpi-bin
#                         retraining across processes under mpirun or srun
#                         (MPI ?= auto builds it when found; tests/cli/mpi.sh)
#   parallel              GNU parallel, for samples/batch/compress-all.sh
#                         (tests/cli/batch.sh)
set -eu
cd "$(dirname "$0")/.."
pkgs="gcc make pkg-config libc6-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev libcairo2-dev libopenblas-dev"
pkgs="$pkgs dataset-fashion-mnist"
pkgs="$pkgs protobuf-c-compiler libprotobuf-c-dev libonnx-dev jq"
optional="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user gcc-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm"
optional="$optional python3-onnx libopenmpi-dev openmpi-bin parallel"

missing=""; required_missing=0
for p in $pkgs $optional; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$st" in
        *"install ok installed"*) ;;
        *) missing="$missing $p"
           case " $optional " in *" $p "*) ;; *) required_missing=1 ;; esac ;;
    esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
elif [ "$required_missing" -eq 0 ]; then
    echo "dcz: optional packages missing (their tests will SKIP):$missing" >&2
    echo "  to run those tests too: sudo apt-get install$missing" >&2
    exit 0
else
    echo "dcz: cannot install packages (not root, no sudo). Run:" >&2
    echo "  sudo apt-get install$missing" >&2
    exit 1
fi

log=${DCZ_DEPS_LOG:-build/deps.log}
mkdir -p "$(dirname "$log")"
: > "$log"
# step TITLE COMMAND...: one line on the terminal, the command's output in
# the log; on failure the log's tail and where the whole of it is
step() {
    local title=$1 t0=$SECONDS; shift
    printf 'dcz: %s ... ' "$title" >&2
    echo "== $title: $*" >> "$log"
    if "$@" >> "$log" 2>&1 < /dev/null; then
        echo "ok ($((SECONDS - t0)) s)" >&2
    else
        echo "FAILED" >&2
        tail -n 15 "$log" | sed 's/^/    /' >&2
        echo "dcz: the whole output is in $log; fix the cause and run this again" >&2
        exit 1
    fi
}
n=$(echo $missing | wc -w)
echo "dcz: $n Debian packages missing:$missing (apt-get output: $log)" >&2
step "apt-get update" "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
step "apt-get install $n packages with their dependencies" "${as_root[@]}" \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
# apt's summary line: "N upgraded, M newly installed, ..."
summary=$(grep -E '^[0-9]+ upgraded, [0-9]+ newly installed' "$log" | tail -n 1)
echo "dcz: packages installed: ${summary:-none reported}" >&2
