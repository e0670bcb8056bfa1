#!/usr/bin/env bash
# Run HERE (where pip reaches the package index): pack everything the GPU machine needs
# (Python 3.12 + torch there, nothing else, no network) into at most 2 parts of <= 60 MiB:
#
#   bash scripts/gpu_bundle.sh [--warp-cache FILE.tar.gz]
#       -> .gpu-bundle/part1/{payload.1,MANIFEST.json}, .gpu-bundle/part2/...
#
# The wheels (Python 3.12, manylinux x86_64; warp-lang 1.19.0 is a CUDA 13 build) are
# installed here into a --target tree, pruned, and xz-compressed with the project's working
# tree; see scripts/gpu_bundle.py for the format and docs/gpu.md for the two device calls.
# The compressed tree is kept in .gpu-bundle/cache, so a re-bundle after a source change
# takes seconds (the first one ~15 minutes on 2 cores: warp's 300 MB library is most of it).
# --warp-cache: a warp-cache.tar.gz that gpu_check.sh brought back, to skip compiles there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.gpu-bundle"
warp_cache=()
if [ "${1:-}" = "--warp-cache" ]; then
  [ -f "${2:-}" ] || { echo "gpu_bundle: --warp-cache needs an existing .tar.gz" >&2; exit 2; }
  warp_cache=(--warp-cache "$(realpath "$2")")
elif [ $# -gt 0 ]; then
  echo "gpu_bundle: unknown argument '$1' (only --warp-cache FILE)" >&2; exit 2
fi

# The env step, the tasks and the tests import these (pytest for the test phase; pyopengl
# for the OpenGL renderer test on EGL). Not packed: mujoco-studio, glfw (viewers only; the
# mujoco package imports glfw optionally) and websockets (mujoco-studio's).
packages=(mujoco==4.0.0 mujoco-core==4.0.0 warp-lang==1.19.0 mujoco-warp==4.0.0
          absl-py etils gymnasium==1.4.0 cloudpickle farama-notifications typing-extensions
          numpy pyopengl pytest pluggy iniconfig packaging pygments)
platforms=(--python-version 3.12 --implementation cp --only-binary=:all:
           --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
wheels="$out/cache/wheels"
site="$out/cache/site"
mkdir -p "$wheels"
python3 -m pip download -q --no-deps "${platforms[@]}" -d "$wheels" "${packages[@]}"
rm -rf "$site"
python3 -m pip install -q --no-deps --no-index --no-compile --ignore-requires-python \
  --find-links "$wheels" \
  --target "$site" "${platforms[@]}" "${packages[@]}"
# Examples, Warp's own tests, docs and console scripts are not needed there (~20 MB).
rm -rf "$site/warp/examples" "$site/warp/tests" "$site/mujoco/doc" "$site/bin"
python3 "$root/scripts/gpu_bundle.py" pack --site "$site" --wheels "$wheels" \
  --src-root "$root" --out "$out" --cache "$out/cache" "${warp_cache[@]}"
