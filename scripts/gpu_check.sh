#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repository root, the bundle's parts carried (docs/gpu.md):
#
#   bash scripts/gpu_check.sh stage   # call 1: keep the carried part(s) in /tmp, check the driver
#   bash scripts/gpu_check.sh         # call 2: verify, install, run the phases, bring back
#
# Fails fast (exit 2, one line why) when nvidia-smi is missing, the driver is older than 580
# (warp-lang 1.19.0 is a CUDA 13 build), a part is missing or corrupted, or Warp sees no
# CUDA device. Otherwise it installs offline (the bundle's pip --target tree, in seconds) and
# runs, each phase under its own time limit and logged, going on after a failure:
#   1 sweep    nworld 1 ... 65536 on the cold kernel cache, JSON rewritten per row
#   2 tests    the warp/CUDA tests of the backend, every task, the scene and the renderers
#   3 parity   CUDA-graph replay vs the same steps un-captured, equal to the bit (4 tests;
#              a skip is a failure on CUDA)
#   4 env      env steps/s of every registered task at 4096 and 16384 envs
#   5 train    rsl-rl PPO iterations on Detumble-RW, 4096 envs: total env steps/s
#   6 restart  a second process on the now-warm kernel cache: import, build, first steps
#   7 cache    the Warp kernel cache, compressed, for a later window to carry back
# Everything goes, timestamped and unbuffered, to $OUT/gpu_check.log as it happens; results
# to $OUT/*.json, $OUT/tests.xml, $OUT/phases.tsv. Exit 0: every phase passed; 1: some
# phase failed or timed out; 2: a precondition failed.
#
# Dry run of the bundle as shipped, with a bare interpreter, here: scripts/gpu_dry_run.sh.
#
# Environment (defaults in brackets):
#   ORBITLAB_GPU_CHECK_DEVICE   Warp device [cuda:0]; 'cpu' dry-runs everything on this host
#   ORBITLAB_GPU_CHECK_SMOKE    1: tiny sizes (nworld 1 2, 8 envs, few steps) [0]
#   ORBITLAB_GPU_CHECK_PHASES   which phases, in order
#                               [sweep tests parity env train restart cache]
#   ORBITLAB_GPU_STAGE          where call 1 keeps the carried parts [/tmp/orbitlab-bundle]
#   ORBITLAB_GPU_BUNDLE         folders holding part<k>/ [.gpu-bundle and the stage folder];
#                               'none': use this Python environment and this tree as they are
#   ORBITLAB_GPU_CHECK_CACHE    Warp kernel cache folder [a fresh one under the work folder
#                               on CUDA; Warp's default (~/.cache/warp) on the CPU]
#   ORBITLAB_GPU_WORK           where the bundle is unpacked [/tmp/orbitlab-gpu]
#   OUT                         results [/tmp/orbitlab-gpu-out]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
device="${ORBITLAB_GPU_CHECK_DEVICE:-cuda:0}"
smoke="${ORBITLAB_GPU_CHECK_SMOKE:-0}"
phases="${ORBITLAB_GPU_CHECK_PHASES:-sweep tests parity env train restart cache}"
stage="${ORBITLAB_GPU_STAGE:-/tmp/orbitlab-bundle}"
read -r -a bundle_dirs <<< "${ORBITLAB_GPU_BUNDLE:-$root/.gpu-bundle $stage}"
work="${ORBITLAB_GPU_WORK:-/tmp/orbitlab-gpu}"
out="${OUT:-/tmp/orbitlab-gpu-out}"
# Seconds per step; they add up to 560 s, under the 570 s (9.5 min) a device call may use.
declare -A limit=([setup]=35 [sweep]=95 [tests]=170 [parity]=55 [env]=115 [train]=50
                  [restart]=30 [cache]=10)
total=0
for s in "${limit[@]}"; do total=$((total + s)); done
mkdir -p "$out"
export PYTHONUNBUFFERED=1

# --------------------------------------------------------------------- timestamped log
start_epoch="$(date +%s.%N)"
exec > >(python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
with open(sys.argv[2], "a") as log:
    for line in iter(sys.stdin.readline, ""):
        stamped = "%s +%6.1fs %s" % (time.strftime("%H:%M:%S"), time.time() - t0, line)
        sys.stdout.write(stamped); sys.stdout.flush(); log.write(stamped); log.flush()
' "$start_epoch" "$out/gpu_check.log") 2>&1
logger=$!
trap 'exec >&- 2>&-; wait "$logger"' EXIT

die() { echo "gpu_check: FAILED: $*"; exit 2; }

check_driver() {
  command -v nvidia-smi >/dev/null \
    || die "nvidia-smi not found: no NVIDIA driver here (ORBITLAB_GPU_CHECK_DEVICE=cpu dry-runs on the CPU)"
  local query
  query="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1)" \
    || die "nvidia-smi failed: ${query//$'\n'/ }"
  echo "gpu: $query" | tee "$out/gpu.txt"
  local driver="${query##*, }"
  [ "${driver%%.*}" -ge 580 ] 2>/dev/null \
    || die "NVIDIA driver '$driver' is older than 580: warp-lang 1.19.0 needs CUDA 13"
}

if [ "${1:-}" = "stage" ]; then  # call 1: the carried parts stay in /tmp for call 2
  mkdir -p "$stage"
  for part in "$root"/.gpu-bundle/part*; do
    [ -d "$part" ] && cp -r "$part" "$stage/" && echo "staged $(basename "$part") in $stage"
  done
  [[ "$device" == cuda* ]] && check_driver
  exit 0
fi
[ $# -eq 0 ] || die "unknown argument '$1' (none, or 'stage')"
[ "$total" -lt 570 ] || die "phase limits add up to $total s, over 570 s"
echo "gpu_check: device $device, smoke $smoke, phases: $phases; limits ${total} s in all"

# ---------------------------------------------------------- preconditions (fail fast)
[[ "$device" == cuda* ]] && check_driver
if [ "${bundle_dirs[0]}" = "none" ]; then
  src="$root"
else
  python3 "$root/scripts/gpu_bundle.py" verify "${bundle_dirs[@]}" || exit 2
  timeout "${limit[setup]}" python3 "$root/scripts/gpu_bundle.py" unpack "${bundle_dirs[@]}" \
    --dest "$work" || die "unpacking the bundle failed or took over ${limit[setup]} s"
  src="$work/src"
  export PYTHONPATH="$work/site:$src:$src/tasks${PYTHONPATH:+:$PYTHONPATH}"
fi
cache="${ORBITLAB_GPU_CHECK_CACHE:-}"
if [ -z "$cache" ] && [[ "$device" == cuda* ]]; then
  cache="$work/warp-cache"  # cold unless the bundle carried one back (then it is warm)
fi
if [ -n "$cache" ]; then
  mkdir -p "$cache" && export WARP_CACHE_PATH="$cache"
fi
cd "$src" || die "no source tree at $src"
python3 - "$device" <<'EOF' || die "the installed stack does not work on $device (see above)"
import importlib, sys
import warp as wp, mujoco, mujoco_warp, gymnasium, numpy
# What the phases import beyond torch, numpy and pytest (scripts/gpu_bundle.sh packs them).
plain = ["hydra", "omegaconf", "antlr4", "yaml", "git", "tensorboard", "google.protobuf",
         "absl", "etils", "OpenGL", "pytest"]
with_torch = ["torch", "tensordict", "rsl_rl.runners", "torch.utils.tensorboard"]
for name in plain:
    importlib.import_module(name)
imported = list(plain)
try:
    import torch
except ModuleNotFoundError:
    if sys.argv[1].startswith("cuda"):
        raise
    print("no torch in this Python: only the phases without it can run (sweep, cache)")
else:
    for name in with_torch:
        importlib.import_module(name)
    imported += with_torch
    print(f"torch {torch.__version__} (cuda {torch.cuda.is_available()})")
wp.init()
n = wp.get_cuda_device_count()
print(f"python {sys.version.split()[0]}, warp {wp.__version__} (cache {wp.config.kernel_cache_dir}), "
      f"mujoco {mujoco.__version__}, gymnasium {gymnasium.__version__}, numpy {numpy.__version__}, "
      f"warp CUDA devices {n}; imported: {', '.join(imported)}")
if sys.argv[1].startswith("cuda") and n < 1:
    sys.exit("warp sees no CUDA device: the driver or CUDA 13 runtime is not usable here")
EOF

# ------------------------------------------------------------------------------ phases
if [ "$smoke" = 1 ]; then
  sweep_n=1,2; sweep_args=(steps=2 trials=1)
  env_n=8; env_args=(steps=2 trials=1); restart_n=8
  train_args=("nworld=[8]" iterations=1 warmup=1 steps_per_env=4)
  tests=(tests/test_warp_backend.py -k "torch_views or reset_of_a_subset")
else
  sweep_n=1,64,512,4096,16384,65536; sweep_args=()
  env_n=4096,16384; env_args=(steps=10 trials=3); restart_n=4096
  train_args=("nworld=[4096]" iterations=3 warmup=1)
  # The graph replay tests are the parity phase's.
  tests=(tests/test_warp_backend.py tests/test_tasks.py tests/test_scene.py
         tests/test_rendering.py tests/test_kernel_terms.py tests/test_observation_pipeline.py
         -k "(warp or cuda) and not cuda_graph_replay")
fi
export ORBITLAB_TEST_DEVICE="$device"
failed=0
printf 'phase\tstatus\tseconds\tlimit_s\n' > "$out/phases.tsv"

run_phase() {  # run_phase NAME COMMAND...
  local name="$1"; shift
  echo "== phase $name: start (limit ${limit[$name]} s)"
  local t0=$SECONDS status
  timeout --kill-after=5 "${limit[$name]}" "$@"
  local rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status="timed out"; failed=1 ;;
    *) status="failed rc=$rc"; failed=1 ;;
  esac
  echo "== phase $name: $status after $((SECONDS - t0)) s"
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - t0))" "${limit[$name]}" \
    >> "$out/phases.tsv"
}

for name in $phases; do
  case $name in
    sweep) run_phase sweep python3 scripts/benchmark.py mode=physics backend=warp \
             "device=$device" "nworld=[$sweep_n]" "${sweep_args[@]}" \
             "json=$out/sweep.json" ;;
    tests) run_phase tests python3 -m pytest -q -p no:cacheprovider -o addopts="" -rs \
             --junitxml="$out/tests.xml" "${tests[@]}" ;;
    parity) run_phase parity python3 scripts/gpu_parity.py --device "$device" \
              --json "$out/parity.json" --junitxml "$out/parity.xml" ;;
    env) run_phase env python3 scripts/benchmark.py mode=env backend=warp "device=$device" \
           "nworld=[$env_n]" "${env_args[@]}" "json=$out/env.json" ;;  # every task
    train) run_phase train python3 scripts/benchmark.py mode=train backend=warp \
             "device=$device" "tasks=[Detumble-RW]" "${train_args[@]}" \
             "json=$out/train.json" ;;
    restart) run_phase restart python3 scripts/gpu_warm_start.py --device "$device" \
               --num-envs "$restart_n" --json "$out/restart.json" ;;
    cache) cache_dir="${WARP_CACHE_PATH:-$(python3 -c 'import warp as wp
wp.init()
print(wp.config.kernel_cache_dir)' 2>/dev/null | tail -n 1)}"  # the last line: after the banner
           run_phase cache tar czf "$out/warp-cache.tar.gz" -C "$cache_dir" . ;;
    *) echo "== phase $name: unknown (phases: sweep tests parity env train restart cache)"
       failed=1 ;;
  esac
done
echo "gpu_check: done in $SECONDS s; $([ $failed = 0 ] && echo 'every phase passed' || echo 'some phase FAILED')"
cat "$out/phases.tsv"
exit "$failed"
