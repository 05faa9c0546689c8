#!/usr/bin/env bash
# Device check (issue 10): ONE command for a machine with an NVIDIA GPU, run in the repo root.
#
#   bash bench/gpu_check.sh              # install the carried onnxruntime-gpu, run the matrix
#   bash bench/gpu_check.sh --stage-only # only keep this call's carried wheel part in /tmp
#   bash bench/gpu_check.sh --dry-run    # no GPU: CPU provider, narrow model (this machine)
#
# The onnxruntime-gpu wheel (~256 MB) is larger than one call may carry (64 MiB with the
# tree), so bench/carry/fetch_wheels.sh splits it into parts; each call carries one part and
# this script keeps it under /tmp/livecam_carry (a warm machine keeps /tmp between calls).
# When every part is there (checked against the .sha256 list) they are joined under /tmp and
# installed with pip --no-deps --target /tmp/site, ahead of the machine's own onnxruntime.
# Results: JSON under $OUT (env.json, cases.json, summary.json, remote.json, gpu_check.log),
# within about 11 minutes in all (the Python part gets what is left of 450 s after the
# install, GPU_CHECK_BUDGET_S changes the 450; the remote case up to 180 s more,
# GPU_CHECK_REMOTE_S).
set -u
START=$(date +%s)
MODE=run
for arg in "$@"; do
  case "$arg" in
    --dry-run) MODE=dry ;;
    --stage-only) MODE=stage ;;
    *) echo "unknown option $arg (use --dry-run or --stage-only)"; exit 2 ;;
  esac
done
OUT=${OUT:-$PWD/out/gpu_check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
CARRY=bench/carry
STASH=${LIVECAM_CARRY_STASH:-/tmp/livecam_carry}
SITE=/tmp/site
mkdir -p "$STASH/wheels"
log() { echo "[gpu_check $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/gpu_check.log"; }

# 1. keep what this call carried (a dry run installs nothing)
[ "$MODE" = dry ] || for f in "$CARRY"/*.whl.part-* "$CARRY"/*.sha256; do
  [ -e "$f" ] && cp -f "$f" "$STASH/" && log "stashed $(basename "$f")"
done
[ "$MODE" = dry ] || for f in "$CARRY"/wheels/*.whl; do
  [ -e "$f" ] && cp -f "$f" "$STASH/wheels/"
done
if [ "$MODE" = stage ]; then
  log "stage only; stashed so far: $(cd "$STASH" && ls | tr '\n' ' ')"
  exit 0
fi

# 2. join and install the GPU build of onnxruntime (not for a dry run)
export PYTHONPATH=$PWD
if [ "$MODE" = run ]; then
  INSTALL=()
  for list in "$STASH"/*.sha256; do
    [ -e "$list" ] || continue
    wheel=$(basename "$list" .sha256)
    missing=0
    for part in $(awk '{print $2}' "$list" | grep -v '\.whl$'); do
      [ -e "$STASH/$part" ] || { log "missing part $part"; missing=1; }
    done
    if [ $missing = 0 ]; then
      cat "$STASH/$wheel".part-* > "/tmp/$wheel"
      if (cd /tmp && grep " $wheel\$" "$list" | sha256sum -c --quiet -); then
        INSTALL+=("/tmp/$wheel")
      else
        log "checksum of the joined $wheel is wrong: not installed"
      fi
    fi
  done
  for f in "$STASH"/wheels/*.whl; do [ -e "$f" ] && INSTALL+=("$f"); done
  if [ ${#INSTALL[@]} -gt 0 ]; then
    log "installing ${INSTALL[*]}"
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$SITE" "${INSTALL[@]}" 2>&1 | tail -3 | tee -a "$OUT/gpu_check.log"
    export PYTHONPATH=$SITE:$PWD
  else
    log "no carried wheels: using the machine's own onnxruntime (may be the CPU build)"
  fi
fi

# 3. the matrix, in what is left of the budget
ELAPSED=$(( $(date +%s) - START ))
BUDGET=$(( ${GPU_CHECK_BUDGET_S:-450} - ELAPSED ))
ARGS=(--out "$OUT" --budget-s "$BUDGET")
[ "$MODE" = dry ] && ARGS+=(--dry-run)
[ -n "${LIVECAM_MODELS_DIR:-}" ] && ARGS+=(--models-dir "$LIVECAM_MODELS_DIR")
log "running bench/gpu_check.py ${ARGS[*]}"
PYTHONUNBUFFERED=1 timeout $(( BUDGET + 20 )) $PY bench/gpu_check.py "${ARGS[@]}" 2>&1 \
  | tee -a "$OUT/gpu_check.log"
RC=${PIPESTATUS[0]}
if [ ! -s "$OUT/summary.json" ]; then  # killed before it could write one
  printf '{"error": "bench/gpu_check.py ended with rc %s before its summary", "rc": %s}\n' \
    "$RC" "$RC" > "$OUT/summary.json"
fi

# 4. the remote case (issue 28): `livecam serve` on this GPU (Triton through PyTriton) and
# 1-32 client streams on 127.0.0.1 (bench/bench_remote.py); the PyTriton wheel comes with
# the carried wheels (bench/carry/wheels) when the machine has none. Figures in remote.json.
REMOTE_S=${GPU_CHECK_REMOTE_S:-180}
if ! $PY -c "import pytriton, tritonclient.grpc" 2>/dev/null; then
  for f in "$STASH"/wheels/nvidia_pytriton-*.whl "$STASH"/wheels/tritonclient-*.whl; do
    [ -e "$f" ] && $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$f" \
      2>&1 | tail -2 | tee -a "$OUT/gpu_check.log"
  done
  export PYTHONPATH=$SITE:$PWD
fi
if $PY -c "import pytriton, tritonclient.grpc" 2>/dev/null; then
  if [ "$MODE" = dry ]; then
    REMOTE_ARGS=(--provider cpu --width 16 --frames 30 --seconds 2 --streams 1,2 --delays 0,50)
  else
    REMOTE_ARGS=(--provider cuda --width 1024 --fp16 --frames 90 --seconds 4 --streams 1,8,16,32)
  fi
  log "remote case: bench/bench_remote.py ${REMOTE_ARGS[*]}"
  PYTHONUNBUFFERED=1 timeout "$REMOTE_S" $PY bench/bench_remote.py "${REMOTE_ARGS[@]}" \
    --json "$OUT/remote.json" 2>&1 | grep -v "REMOTE LOST" | tail -12 | tee -a "$OUT/gpu_check.log"
  [ -s "$OUT/remote.json" ] || log "remote case: no figures (rc ${PIPESTATUS[0]})"
else
  log "remote case skipped: no nvidia-pytriton/tritonclient here (carry their wheels)"
  echo '{"skipped": "no nvidia-pytriton/tritonclient on this machine"}' > "$OUT/remote.json"
fi
log "done, rc $RC"
exit "$RC"
