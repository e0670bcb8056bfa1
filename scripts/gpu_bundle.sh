#!/usr/bin/env bash
# Run HERE (where pip reaches the package index): pack everything the GPU machine needs
# (Python 3.12 + torch, numpy and pytest there, nothing else, no network) into at most 2
# parts of <= 60 MiB:
#
#   bash scripts/gpu_bundle.sh [--warp-cache FILE.tar.gz] [--python 3.12] [--out DIR]
#       -> .gpu-bundle/part1/{payload.1,MANIFEST.json}, .gpu-bundle/part2/...
#
# The wheels (manylinux x86_64; warp-lang 1.19.0 is a CUDA 13 build) are installed here into
# a --target tree, pruned, and xz-compressed with the project's working tree; see
# scripts/gpu_bundle.py for the format and docs/gpu.md for the two device calls. Each
# distribution is compressed on its own and kept in .gpu-bundle/cache, so a re-bundle after
# a source change takes seconds (the first one ~15 minutes on 2 cores: warp's 300 MB library
# is most of it).
# --warp-cache  a warp-cache.tar.gz that gpu_check.sh brought back, to skip compiles there.
# --python      another Python version's wheels (the CPU dry run, when no CPU torch for
#               3.12 can be had here); --out DIR then keeps it apart from the real bundle.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.gpu-bundle"
py=3.12
warp_cache=()
while [ $# -gt 0 ]; do
  case "$1" in
    --warp-cache)
      [ -f "${2:-}" ] || { echo "gpu_bundle: --warp-cache needs an existing .tar.gz" >&2; exit 2; }
      warp_cache=(--warp-cache "$(realpath "$2")"); shift 2 ;;
    --python)
      [[ "${2:-}" =~ ^3\.[0-9]+$ ]] || { echo "gpu_bundle: --python needs a version like 3.12" >&2; exit 2; }
      py="$2"; shift 2 ;;
    --out)
      [ -n "${2:-}" ] || { echo "gpu_bundle: --out needs a folder" >&2; exit 2; }
      out="$(realpath -m "$2")"; shift 2 ;;
    *) echo "gpu_bundle: unknown argument '$1' (--warp-cache FILE, --python X.Y, --out DIR)" >&2
       exit 2 ;;
  esac
done

# What the phases of scripts/gpu_check.sh import beyond torch, numpy and pytest (found by
# running every phase in a bare interpreter: docs/gpu.md, "Dry runs"):
# * the simulation and the tasks: mujoco + mujoco-core, warp-lang, mujoco-warp (+ absl-py,
#   etils), gymnasium (+ cloudpickle, farama-notifications, typing-extensions);
# * every `orbitlab` verb and scripts/benchmark.py: hydra-core, omegaconf,
#   antlr4-python3-runtime (an sdist only: built into a wheel here), pyyaml;
# * rsl-rl training (the train phase): rsl-rl-lib, tensordict, pyvers, gitpython, gitdb,
#   smmap, and tensorboard + protobuf (rsl_rl.utils imports torch.utils.tensorboard, which
#   imports tensorboard's protobuf messages, whether or not anything is logged);
# * the test phase: pytest's own dependencies and pyopengl (the renderer test on EGL).
# pytest and its dependencies are packed too (small), for a machine without them; numpy is
# not (the device has it, and the device's own copy of any distribution is used anyway:
# gpu_bundle.py, PINNED aside).
# Not packed: mujoco-studio, glfw (viewers only; mujoco imports glfw optionally),
# websockets (mujoco-studio's), tensorboard's server (grpcio, werkzeug, markdown, pillow,
# tensorboard-data-server: not imported to write event files) and rsl-rl-lib's onnx /
# onnxscript (its ONNX export only).
packages=(mujoco==4.0.0 mujoco-core==4.0.0 warp-lang==1.19.0 mujoco-warp==4.0.0
          absl-py etils gymnasium==1.4.0 cloudpickle farama-notifications typing-extensions
          hydra-core==1.3.8 omegaconf==2.3.1 antlr4-python3-runtime==4.9.3 pyyaml==6.0.4
          rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 gitpython==3.2.1 gitdb==4.0.12
          smmap==5.0.3 tensorboard==2.21.0 protobuf==7.36.2
          pyopengl pytest pluggy iniconfig packaging pygments)
sdists=(antlr4-python3-runtime==4.9.3)
platforms=(--python-version "$py" --implementation cp --only-binary=:all:
           --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
wheels="$root/.gpu-bundle/cache/wheels-$py"
site="$root/.gpu-bundle/cache/site-$py"
mkdir -p "$wheels"
for sdist in "${sdists[@]}"; do  # pure Python: a wheel built by any Python serves all
  name="${sdist%%==*}"; name="${name//-/_}"
  compgen -G "$wheels/${name}-${sdist##*==}-*.whl" >/dev/null \
    || python3 -m pip wheel -q --no-deps --no-binary=:all: -w "$wheels" "$sdist"
done
binaries=()
for p in "${packages[@]}"; do
  [[ " ${sdists[*]} " == *" $p "* ]] || binaries+=("$p")
done
python3 -m pip download -q --no-deps "${platforms[@]}" -d "$wheels" "${binaries[@]}"
rm -rf "$site"
python3 -m pip install -q --no-deps --no-index --no-compile --ignore-requires-python \
  --find-links "$wheels" \
  --target "$site" "${platforms[@]}" "${packages[@]}"
# Examples, tests, test data, docs, C headers, tensorboard's web front end and console
# scripts are not needed there (~35 MB).
rm -rf "$site/warp/examples" "$site/warp/tests" "$site/mujoco/doc" "$site/bin" \
  "$site/mujoco/testdata" "$site/mujoco/include" "$site/mujoco_warp/test_data" \
  "$site/tensorboard/webfiles.zip" "$site/tensorboard/plugins/projector/tf_projector_plugin"
rm -f "$site"/mujoco/*_test.py "$site"/mujoco_warp/_src/*_test.py
python3 "$root/scripts/gpu_bundle.py" pack --site "$site" --wheels "$wheels" \
  --src-root "$root" --out "$out" --cache "$root/.gpu-bundle/cache/archives" \
  --python "$py" "${warp_cache[@]}"
