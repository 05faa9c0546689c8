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
# Results: JSON under $OUT (env.json, cases.json, summary.json, gpu_check.log), within
# 8 minutes in all (the Python part gets what is left of 450 s after the install;
# GPU_CHECK_BUDGET_S changes the 450).
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
log "done, rc $RC"
exit "$RC"
