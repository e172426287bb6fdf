#!/usr/bin/env bash
# Installs everything Strata needs to build and test, from Debian's packages only
# (Open MPI for st::dist, Fashion-MNIST for the DP-SGD example, clang and its
# libFuzzer runtime for the fuzz targets).
#   sudo scripts/install-deps.sh            # build + test dependencies
#   sudo scripts/install-deps.sh --peers    # also PyTorch (libtorch) for side-by-side benchmarks,
#                                           # matplotlib for their plots
set -euo pipefail

packages=(cmake ninja-build g++ make libeigen3-dev libtbb-dev librange-v3-dev libgtest-dev
          libgmock-dev libbenchmark-dev libopenblas-dev libdlpack-dev python3 zlib1g-dev
          libopenmpi-dev openmpi-bin dataset-fashion-mnist clang libclang-rt-14-dev)
if [[ "${1:-}" == "--peers" ]]; then
  packages+=(libtorch-dev python3-torch libopenblas0-openmp python3-matplotlib)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
