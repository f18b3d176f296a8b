#!/usr/bin/env bash
# The GPU check: run it at once whenever a machine with a GPU is available (`make gpu-check`); at most 8 minutes.
#
# Five measurements, each a bench module with a time limit of its own, each one's output in $GPU_CHECK_OUT/NAME.txt:
#   first-steps   a paper config's first steps on CUDA with AMP (bench.paper_first_steps; its reference trial)
#   packing       1 against 4 MiniLM trials on one GPU, gpu 0.25 each (bench.gpu_packing; real sweeps)
#   cached-loss   the cached contrastive loss at batch 256 on CUDA, peak memory (bench.cached_loss; BERT-base size)
#   encode        encoding against sentence-transformers on the same GPU (bench.encode)
#   train-cosent  CoSENT training against sentence-transformers' fit on the same GPU, AMP on both (bench.train_cosent)
# Without CUDA (or with --cpu) the same five run on the CPU at a tiny size: that checks the script, not the figures.
# --dry-run prints the commands and runs nothing (--gpu --dry-run: the GPU's commands on any machine). The summary names the device and each step's status and seconds.
#
#   bench/gpu_check.sh [--cpu|--gpu] [--dry-run]       # PYTHON: the interpreter (default python); GPU_CHECK_OUT: the folder
set -uo pipefail

PYTHON=${PYTHON:-python}
OUT=${GPU_CHECK_OUT:-gpu_check_out}
MODE=auto
DRY=0
for arg in "$@"; do
  case "$arg" in
    --cpu) MODE=cpu ;;
    --gpu) MODE=gpu ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$arg' (--cpu, --gpu, --dry-run)" >&2; exit 2 ;;
  esac
done
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

if [ "$MODE" = auto ]; then
  if [ "$DRY" = 0 ] && "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    MODE=gpu
  else
    MODE=cpu
  fi
fi

# name, time limit (seconds), command: the GPU sizes add up to at most 450 s of limits, the rest is start-up
if [ "$MODE" = gpu ]; then
  DEVICE=$([ "$DRY" = 1 ] && echo "a GPU (dry run)" || "$PYTHON" -c 'import torch; print(torch.cuda.get_device_name())')
  STEPS=(
    "first-steps|90|-m bench.paper_first_steps --config configs/paper-cosent-stsb.yaml --steps 100 --device cuda --amp"
    "packing|150|-m bench.gpu_packing --packed 4 --steps 60 --model minilm"
    "cached-loss|60|-m bench.cached_loss --batch 256 --minibatches 32,64 --layers 12 --hidden 768 --device cuda"
    "encode|45|-m bench.encode --batch-size 128 --limit 4000"
    "train-cosent|105|-m bench.train_cosent --device cuda --amp --pairs 3200 --warmup-pairs 320"
  )
else
  DEVICE="cpu (no CUDA: tiny sizes, a check of the script only)"
  STEPS=(
    "first-steps|300|-m bench.paper_first_steps --config configs/paper-cosent-stsb.yaml --steps 2 --device cpu --no-amp --dev-pairs 20"
    "packing|600|-m bench.gpu_packing --packed 2 --steps 2 --model tiny"
    "cached-loss|300|-m bench.cached_loss --batch 16 --minibatches 4 --layers 1 --hidden 32 --device cpu"
    "encode|300|-m bench.encode --batch-size 16 --limit 64"
    "train-cosent|600|-m bench.train_cosent --pairs 32 --warmup-pairs 0 --test-pairs 20 --max-length 32"
  )
fi

echo "gpu check on: $DEVICE (mode $MODE); output in $OUT/"
[ "$DRY" = 1 ] || mkdir -p "$OUT"
summary=()
failed=0
for step in "${STEPS[@]}"; do
  IFS='|' read -r name limit command <<< "$step"
  if [ "$DRY" = 1 ]; then
    echo "$name (limit ${limit}s): $PYTHON $command"
    continue
  fi
  echo "== $name (limit ${limit}s): $PYTHON $command"
  start=$SECONDS
  # shellcheck disable=SC2086 - the command's words are its arguments
  timeout "$limit" "$PYTHON" $command > "$OUT/$name.txt" 2>&1
  rc=$?
  seconds=$((SECONDS - start))
  grep -E '^\|' "$OUT/$name.txt" || tail -5 "$OUT/$name.txt"
  grep -E '^(ratio|ours|packed|peak|first)' "$OUT/$name.txt" || true
  case $rc in
    0) status=ok ;;
    124) status="TIMED OUT"; failed=1 ;;
    *) status="FAILED (exit $rc)"; failed=1 ;;
  esac
  summary+=("$name: $status in ${seconds}s")
done
[ "$DRY" = 1 ] && exit 0
echo
echo "gpu check summary ($DEVICE):"
printf '  %s\n' "${summary[@]}"
exit $failed
