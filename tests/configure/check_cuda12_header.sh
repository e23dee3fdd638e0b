#!/usr/bin/env bash
# A CUDA 12 toolkit's headers (CUDART_VERSION 12080, from a stand-in cuda_runtime_api.h) stop the
# CUDA-using headers with graphpool's own message, not an obscure error about a capture call.
#   check_cuda12_header.sh CXX INCLUDE_DIR
set -uo pipefail
cxx=$1 include=$2
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
echo '#define CUDART_VERSION 12080' >"$stub/cuda_runtime_api.h"
out=$(echo '#include <graphpool/detail/cuda_check.hpp>' | "$cxx" -std=c++17 -I"$stub" -I"$include" -x c++ -fsyntax-only - 2>&1)
rc=$?
echo "$out" | head -n 3
[ $rc -ne 0 ] || { echo "FAILED: compiled against CUDA 12 headers"; exit 1; }
[[ "$out" == *"graphpool needs the CUDA 13 toolkit"*"cudaStreamGetCaptureInfo"* ]] || { echo "FAILED: not graphpool's message"; exit 1; }
