#!/usr/bin/env bash
# deps.sh: makes sure the Debian packages dcz builds and tests with are
# installed. As root it installs what is missing with apt-get; otherwise it
# uses sudo when that works without a password prompt; failing both it
# prints the exact apt-get line to run and exits 1 (or, when only optional
# packages are missing, says which tests will SKIP and exits 0).
#
# Packages, each for a reason (docs: README.md, "Dependencies"):
#   gcc make pkg-config   the build
#   zlib1g-dev            gzip-compressed IDX datasets
#   libpng-dev            PNG images and plots
#   libopenblas-dev       dense GEMM for training on CPU
#   dataset-fashion-mnist the data of the demo and of the data-driven tests
#   protobuf-c-compiler   generates the ONNX bindings (protoc-c) at build time
#   libprotobuf-c-dev     the protobuf-c runtime those bindings use
#   libonnx-dev           onnx.proto, the ONNX schema the bindings come from
# Optional (their tests SKIP without them):
#   gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#                         libdcz and its runtime tests built for and run on
#                         64-bit Arm (make test-aarch64, part of make test)
set -eu
pkgs="gcc make pkg-config libc6-dev zlib1g-dev libpng-dev libopenblas-dev dataset-fashion-mnist"
pkgs="$pkgs protobuf-c-compiler libprotobuf-c-dev libonnx-dev"
optional="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
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
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -eq 0 ]; then
    echo "dcz: installing missing Debian packages:$missing" >&2
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >&2
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "dcz: installing missing Debian packages:$missing" >&2
    sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
elif [ "$required_missing" -eq 0 ]; then
    echo "dcz: optional packages missing (make test-aarch64 will SKIP):$missing" >&2
    echo "  to run those tests too: sudo apt-get install$missing" >&2
else
    echo "dcz: cannot install packages (not root, no sudo). Run:" >&2
    echo "  sudo apt-get install$missing" >&2
    exit 1
fi
