#!/usr/bin/env bash
# deps.sh: makes sure the Debian packages dcz builds and tests with are
# installed. As root it installs what is missing with apt-get; otherwise it
# uses sudo when that works without a password prompt; failing both it
# prints the exact apt-get line to run and exits 1.
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
set -eu
pkgs="gcc make pkg-config libc6-dev zlib1g-dev libpng-dev libopenblas-dev dataset-fashion-mnist"
pkgs="$pkgs protobuf-c-compiler libprotobuf-c-dev libonnx-dev"
missing=""
for p in $pkgs; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$st" in *"install ok installed"*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
echo "dcz: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >&2
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
else
    echo "dcz: cannot install packages (not root, no sudo). Run:" >&2
    echo "  sudo apt-get install$missing" >&2
    exit 1
fi
