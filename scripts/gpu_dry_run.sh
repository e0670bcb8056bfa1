#!/usr/bin/env bash
# The GPU check as shipped, dry-run HERE on Warp's CPU device with a bare interpreter:
#
#   bash scripts/gpu_dry_run.sh [--python PYTHON3.12] [--fallback PYTHON3.11] [--no-build]
#
# 1. Builds the bundle (scripts/gpu_bundle.sh -> .gpu-bundle/part1, part2; seconds when its
#    cache is warm) unless --no-build.
# 2. Makes a bare venv from PYTHON (default: pyenv's 3.12.1, the device's Python version)
#    holding only what the device image has: numpy, pytest and, where one can be had
#    without CUDA, a CPU build of torch (torch==2.13.0 if it resolves to a +cpu wheel here;
#    the CUDA builds need gigabytes of CUDA libraries and are not installed).
# 3. Plays the two device calls with the real parts: call 1 (`gpu_check.sh stage`) in a copy
#    of the working tree that holds part1 only, call 2 (`gpu_check.sh`) in another that
#    holds part2 only, the stage folder between them, with the bare venv's python3 first on
#    PATH and nothing else of this machine's Python (env -i): smoke sizes, Warp's CPU device.
#    Every phase runs when the venv has torch; without torch, the phases that need none
#    (sweep, cache) -- the verification, unpacking and the import check of every bundled
#    package that does not need torch still run against the real parts.
# 4. Without a CPU torch for PYTHON: the same again with FALLBACK (default: pyenv's 3.11.7,
#    for which a CPU torch 2.13.0 wheel lies here) and a bundle of the same recipe for its
#    version (gpu_bundle.sh --python 3.11 --out .gpu-bundle/dry-3.11: the same packages,
#    the same pure-Python wheels and the same warp-lang wheel), every phase.
#
# Results: $OUT/py<version>/ (gpu_check.log, phases.tsv, *.json) for each interpreter, and
# $OUT/dry_run.tsv (interpreter, phase, status, seconds). Exit 0 when every phase run passed.
# The venvs are kept in .gpu-bundle/bare-<version>/ (--fresh makes them anew).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="/root/.pyenv/versions/3.12.1/bin/python3.12"
fallback="/root/.pyenv/versions/3.11.7/bin/python3.11"
build=1
fresh=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="${2:?--python needs an interpreter}"; shift 2 ;;
    --fallback) fallback="${2:?--fallback needs an interpreter}"; shift 2 ;;
    --no-build) build=0; shift ;;
    --fresh) fresh=1; shift ;;
    *) echo "gpu_dry_run: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
out="${OUT:-/tmp/orbitlab-gpu-dry}"
mkdir -p "$out"
printf 'python\tphase\tstatus\tseconds\tlimit_s\n' > "$out/dry_run.tsv"
status=0

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }

bare_venv() {  # bare_venv PYTHON -> prints the venv folder; installs numpy, pytest, CPU torch
  local py="$1" ver venv
  ver="$(version_of "$py")"
  venv="$root/.gpu-bundle/bare-$ver"
  if [ "$fresh" = 1 ] || [ ! -x "$venv/bin/python3" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv" >&2
    "$venv/bin/python3" -m pip install -q numpy pytest >&2
    # torch==2.13.0 only when it resolves to a CPU build (its file name says +cpu).
    local report
    report="$(mktemp)"
    if "$venv/bin/python3" -m pip install -q --dry-run --no-deps --report "$report" \
         torch==2.13.0 >/dev/null 2>&1 \
       && "$venv/bin/python3" -c 'import json, sys
url = json.load(open(sys.argv[1]))["install"][0]["download_info"]["url"]
sys.exit(0 if "%2Bcpu" in url or "+cpu" in url else 1)' "$report"; then
      "$venv/bin/python3" -m pip install -q torch==2.13.0 >&2
    else
      echo "gpu_dry_run: no CPU torch 2.13.0 for Python $ver here (only a CUDA build)" >&2
    fi
    rm -f "$report"
  fi
  echo "$venv"
}

tree_copy() {  # tree_copy DEST [PART]: the working tree as the device gets it, + one part
  local dest="$1" part="${2:-}"
  mkdir -p "$dest/.gpu-bundle"
  (cd "$root" && git ls-files -z -co --exclude-standard \
     | xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh \
     | xargs -0 cp --parents -t "$dest")
  if [ -n "$part" ]; then
    cp -al "$part" "$dest/.gpu-bundle/" 2>/dev/null || cp -r "$part" "$dest/.gpu-bundle/"
  fi
}

dry_check() {  # dry_check VENV BUNDLE_DIR PHASES
  local venv="$1" bundle="$2" phases="$3" ver tmp rc=0
  ver="$("$venv/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  tmp="$(mktemp -d /tmp/orbitlab-dry.XXXXXX)"
  local res="$out/py$ver"
  rm -rf "$res"
  local base=(env -i "HOME=$HOME" "PATH=$venv/bin:/usr/local/bin:/usr/bin:/bin"
              "LANG=C.UTF-8" "ORBITLAB_GPU_CHECK_DEVICE=cpu" "ORBITLAB_GPU_CHECK_SMOKE=1"
              "ORBITLAB_GPU_STAGE=$tmp/stage" "ORBITLAB_GPU_WORK=$tmp/work")
  echo "gpu_dry_run: Python $ver ($venv/bin/python3), bundle $bundle, phases: $phases"
  tree_copy "$tmp/call1" "$bundle/part1"
  (cd "$tmp/call1" && "${base[@]}" "OUT=$res/call1" bash scripts/gpu_check.sh stage) || rc=$?
  if [ -d "$bundle/part2" ]; then tree_copy "$tmp/call2" "$bundle/part2"; else tree_copy "$tmp/call2"; fi
  (cd "$tmp/call2" && "${base[@]}" "OUT=$res" "ORBITLAB_GPU_CHECK_PHASES=$phases" \
     bash scripts/gpu_check.sh) || rc=$?
  if [ -f "$res/phases.tsv" ]; then
    tail -n +2 "$res/phases.tsv" | sed "s/^/$ver\t/" >> "$out/dry_run.tsv"
  fi
  rm -rf "$tmp"
  return "$rc"
}

if [ ! -x "$python" ]; then
  echo "gpu_dry_run: no interpreter at $python (--python PATH)" >&2; exit 2
fi
ver="$(version_of "$python")"
if [ "$build" = 1 ]; then
  bash "$root/scripts/gpu_bundle.sh"
fi
venv="$(bare_venv "$python")"
if "$venv/bin/python3" -c 'import torch' 2>/dev/null; then
  dry_check "$venv" "$root/.gpu-bundle" "sweep tests parity env train restart cache" \
    || status=1
else
  dry_check "$venv" "$root/.gpu-bundle" "sweep cache" || status=1
  [ -x "$fallback" ] || { echo "gpu_dry_run: no fallback interpreter at $fallback" >&2; exit 2; }
  fver="$(version_of "$fallback")"
  echo "gpu_dry_run: no CPU torch for Python $ver: every phase with Python $fver instead"
  if [ "$build" = 1 ] || [ ! -d "$root/.gpu-bundle/dry-$fver/part1" ]; then
    bash "$root/scripts/gpu_bundle.sh" --python "$fver" --out "$root/.gpu-bundle/dry-$fver"
  fi
  fvenv="$(bare_venv "$fallback")"
  "$fvenv/bin/python3" -c 'import torch' \
    || { echo "gpu_dry_run: no CPU torch for Python $fver either" >&2; exit 2; }
  dry_check "$fvenv" "$root/.gpu-bundle/dry-$fver" \
    "sweep tests parity env train restart cache" || status=1
fi
echo "gpu_dry_run: $([ $status = 0 ] && echo 'every phase passed' || echo 'some phase FAILED')"
column -t -s $'\t' "$out/dry_run.tsv" 2>/dev/null || cat "$out/dry_run.tsv"
exit "$status"
