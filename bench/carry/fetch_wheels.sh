#!/usr/bin/env bash
# On a machine with internet (not the device machine): download the wheels bench/gpu_check.sh
# installs there and split the big one into parts a device call can carry.
#
#   bash bench/carry/fetch_wheels.sh [ORT_VERSION]   # default 1.31.1 (>= 1.27: CUDA 13)
#
# Writes bench/carry/onnxruntime_gpu-*.whl.part-aa, -ab, ... (PART_SIZE, default 56m: a call
# carries at most 64 MiB with the working tree, ~4 MiB), bench/carry/<wheel>.sha256 (the
# checksums of the parts and of the whole wheel) and bench/carry/wheels/ (small pure-Python
# wheels livecam needs that the device image lacks). All of it is git-ignored.
set -eu
cd "$(dirname "$0")"
VERSION=${1:-1.31.1}
PART_SIZE=${PART_SIZE:-56m}
PY=${PYTHON:-python3}
PLATFORM=(--python-version 3.12 --implementation cp --only-binary=:all: --no-deps
          --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
          --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
TMP=$(mktemp -d)
$PY -m pip download "onnxruntime-gpu==$VERSION" "${PLATFORM[@]}" -d "$TMP"
# the remote case (`livecam serve`): PyTriton (~40 MB, bundles tritonserver) is split too
$PY -m pip download "nvidia-pytriton==0.5.7" "${PLATFORM[@]}" -d "$TMP"
rm -f ./*.whl.part-* ./*.sha256
for whl in "$TMP"/*.whl; do
  name=$(basename "$whl")
  split -b "$PART_SIZE" -a 2 "$whl" "$name.part-"
  sha256sum "$name".part-* > "$name.sha256"
  (cd "$TMP" && sha256sum "$name") >> "$name.sha256"
done
rm -rf "$TMP"
mkdir -p wheels
$PY -m pip download platformdirs "${PLATFORM[@]}" -d wheels
# PyTriton's and tritonclient's own dependencies (no-deps wheels; the image may lack them)
$PY -m pip download "tritonclient[grpc]>=2.45" grpcio protobuf pyzmq sh typing-inspect \
  mypy-extensions wrapt python-rapidjson "ml-dtypes<=0.5.4" "${PLATFORM[@]}" -d wheels
ls -l ./*.whl.part-* ./*.sha256 wheels/
# the small real models `livecam bench --synthetic` needs (SCRFD 2.5G, MobileFaceNet), from
# the test data beside the checkout (carried with the last call; git-ignored)
TESTDATA=${LIVECAM_TESTDATA:-../../../shared/testdata}
mkdir -p models
cp "$TESTDATA/models/scrfd_2.5g_kps.onnx" "$TESTDATA/models/mobilefacenet.onnx" models/
ls -l models/
