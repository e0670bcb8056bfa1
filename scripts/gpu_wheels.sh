#!/usr/bin/env bash
# Run HERE (where pip reaches PyPI): fetch the wheels the GPU machine lacks (it has
# python3.12 + torch but no mujoco, warp or mujoco-warp and cannot download), and
# split them into parts that fit the device tool's 64 MiB working-tree limit.
#
#   bash scripts/gpu_wheels.sh            # writes .whl/part1 .. .whl/partN
#
# Then, with the device tool, carry one part per call, back to back while the
# machine stays warm (each call: carry [".whl/partK"], command
#   mkdir -p /tmp/orbitlab-whl && cp .whl/partK/* /tmp/orbitlab-whl/
# ) and finish with: bash scripts/gpu_check.sh   (it reassembles and installs).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl/download && mkdir -p .whl/download
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl/download \
  mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 warp-lang==1.19.0 \
  mujoco-warp==4.0.0 glfw pyopengl
# One stream of bytes, cut into 60 MiB parts; gpu_check.sh joins them again.
(cd .whl/download && tar cf - *.whl) > .whl/wheels.tar
rm -rf .whl/part* && split -b 60m -d .whl/wheels.tar .whl/chunk.
i=1
for chunk in .whl/chunk.*; do
  mkdir -p ".whl/part$i" && mv "$chunk" ".whl/part$i/"
  i=$((i + 1))
done
rm -f .whl/wheels.tar
ls -la .whl/part*
