#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repository root: install what is missing from the
# wheel parts copied to /tmp/orbitlab-whl (see scripts/gpu_wheels.sh), run the
# MuJoCo-Warp tests on CUDA, then the nworld sweep. Budget: under 8 minutes.
#   bash scripts/gpu_check.sh [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/orbitlab-gpu}}"
mkdir -p "$out"
site=/tmp/orbitlab-site
if ! python3 -c "import mujoco_warp" 2>/dev/null; then
  if [ -d /tmp/orbitlab-whl ]; then
    mkdir -p /tmp/orbitlab-wheels
    cat /tmp/orbitlab-whl/chunk.* | tar xf - -C /tmp/orbitlab-wheels
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" /tmp/orbitlab-wheels/*.whl || exit 1
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import warp as wp, mujoco, mujoco_warp; wp.init(); print('warp', wp.__version__, 'mujoco', mujoco.__version__, 'cuda devices', wp.get_cuda_device_count())"

# 1. The backend tests on CUDA (same tests CI runs on Warp's CPU device, plus graph replay).
ORBITLAB_TEST_DEVICE=cuda:0 timeout 240 python3 -m pytest -q -p no:cacheprovider \
  -o addopts="" tests/test_warp_backend.py 2>&1 | tee "$out/gpu_tests.txt"

# 2. The sweep: orbit-coupled vs plain MuJoCo-Warp, graphs on both, memory per world.
timeout 240 python3 scripts/benchmark.py physics --backend warp --device cuda:0 \
  --fresh-kernel-cache --json "$out/bench_warp.json" 2>&1 | tee "$out/bench_warp.txt"
