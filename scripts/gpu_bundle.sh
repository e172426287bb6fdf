#!/usr/bin/env bash
# Builds the CUDA tests and benchmarks HERE and packs them, with the shared
# libraries they need that a GPU machine's image lacks (TBB, OpenBLAS, Open MPI,
# Google Benchmark: that image has CUDA, cuBLAS, cuDNN and PyTorch but none of
# Debian's C++ packages), into gpu-bundle/bundle.tar.xz for scripts/gpu_run_bundle.sh.
# CUDA's own libraries (and NCCL) are not packed: the GPU machine's are used.
# The MPI collectives' test goes with Open MPI's runtime (mpirun, orted, its
# plugins and help files) under ompi/, laid out as under /usr so that OPAL_PREFIX
# relocates it. The DP-SGD example goes with Fashion-MNIST's files.
#   scripts/gpu_bundle.sh [sm]   (default 90)
set -euo pipefail
cd "$(dirname "$0")/.."
sm=${1:-90}
build=build-gpu
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$sm" -DSTRATA_BUILD_EXAMPLES=ON >/dev/null
ninja -C "$build" strata cuda_tests cuda_ops dist_group_tests dp_sgd_distributed
stage=$(mktemp -d)
mkdir -p "$stage/lib" "$stage/ompi/bin" "$stage/ompi/lib/x86_64-linux-gnu" "$stage/ompi/share" gpu-bundle
binaries=("$build/tests/cuda_tests" "$build/bench/cuda_ops" "$build/tests/dist_group_tests"
  "$build/examples/dp_sgd_distributed")
cp "${binaries[@]}" "$stage/"
ompi=/usr/lib/x86_64-linux-gnu/openmpi
cp -rL "$ompi" "$stage/ompi/lib/x86_64-linux-gnu/"
cp -L /usr/bin/orted /usr/bin/mpirun "$stage/ompi/bin/"
cp -r /usr/share/openmpi "$stage/ompi/share/"
ldd "${binaries[@]}" /usr/bin/orted "$ompi"/lib/openmpi3/*.so 2>/dev/null | awk '/=>/ {print $3}' |
  sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.so|/libcu' |
  xargs -I{} cp -L {} "$stage/lib/"
strip --strip-debug "$stage"/cuda_tests "$stage"/cuda_ops "$stage"/dist_group_tests \
  "$stage"/dp_sgd_distributed "$stage"/lib/*.so*
tar -C "$stage" -cJf gpu-bundle/bundle.tar.xz .
# Fashion-MNIST (dataset-fashion-mnist) for the DP-SGD runs, already compressed.
[[ -d /usr/share/datasets/fashion-mnist ]] && cp -r /usr/share/datasets/fashion-mnist gpu-bundle/
rm -rf "$stage"
ls -la gpu-bundle/bundle.tar.xz
