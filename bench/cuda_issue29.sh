#!/usr/bin/env bash
# Everything issue 29 asks to see on a GPU, in one command on the lent
# machine (its device time is short): run there from the repository root
# with the bundle scripts/cuda_bundle.sh made here carried along:
#
#   here:   scripts/cuda_bundle.sh && echo /.cuda-bundle/ >> .git/info/exclude
#   device: run(command="bash bench/cuda_issue29.sh tests", carry=[".cuda-bundle"])
#           run(command="bash bench/cuda_issue29.sh lenet comm infer train profile nccl2", carry=[".cuda-bundle"])
#
# (a device command may run 10 minutes: the tests take one call, the rest
# another). WEIR_GPU=cpu runs the stages' commands on the CPU instead, to
# try the script on a machine without a GPU.
# Stages (default: all, in this order; each writes $OUT/<stage>.log, or
# /tmp/weir-gpu/<stage>.log without $OUT):
#   tests   weir_cuda_tests: every op family against the CPU kernels, the
#           NCCL world, LeNet on the GPU like the CPU (gtest XML too); the
#           failed tests again with WEIR_SYNC_STEPS=1 (each step waited
#           for), which tells a fault of running ahead from a kernel's
#   lenet   graph-runner train --model lenet, 20 steps, CPU and cuda:0 (and
#           cuda:0 waiting for each step), and a launched NCCL world of one
#           (twice): the largest relative loss difference; every run's
#           output in lenet-runs.txt
#   comm    the gradient-communication strategies on the GPU against the
#           CPU, LeNet's losses: gradient merge (k 2) on one GPU; with 2 or
#           more GPUs, DGC, LocalSGD and adaptive LocalSGD on 2 processes
#           (NCCL) against 2 on the CPU (Gloo)
#   infer   graph-runner bench --device cuda: ResNet-50 at batch 1 and 64,
#           BERT-base (12 layers, 768 wide, 12 heads) at seq 128, batch 1 and
#           32; each also with WEIR_SYNC_STEPS=1, the executor waiting for
#           every step (the baseline of running ahead, in the same run)
#   train   graph-runner train --device cuda --amp fp16: ResNet-50, batch 128,
#           224x224 synthetic images, 1000 classes (images/s, TFLOP/s)
#   profile ResNet-50 AMP training at batch 128 with --profile, which waits
#           for each node's device work: the time of each op type's nodes
#           (their device time), against the step time; the trace comes
#           back as resnet50-train-trace.json
#   nccl2   with 2 or more GPUs: LeNet on 2 processes (NCCL) against 1
# Each bench line carries the estimated TFLOP/s; divide by the GPU's peak
# (H100 SXM dense: f32 67, tf32 495, f16/bf16 989 TFLOP/s) for the fraction.
set -uo pipefail
root=$(pwd)
out=${OUT:-/tmp/weir-gpu}
mkdir -p "$out"
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(tests lenet comm infer train profile nccl2)

# Every program runs under a time limit, so that a hang cannot take the device
# call's 10 minutes: `limit` seconds (default 120), or what is left of
# $budget seconds from this script's start, whichever is less.
budget=${WEIR_GPU_BUDGET:-580}
limited() {
  local cap=${limit:-120} left=$((budget - SECONDS))
  (( left < cap )) && cap=$left
  if (( cap < 5 )); then echo "out of time (${budget} s): skipped $(basename "$1")" >&2; return 124; fi
  timeout -k 10 "$cap" "$@"
}

work=/tmp/weir-cuda
rm -rf "$work" && mkdir -p "$work"
limited tar -C "$work" -xJf "$root/.cuda-bundle/weir-cuda-bundle.tar.xz" || { echo "no bundle: run scripts/cuda_bundle.sh here first"; exit 1; }
bin=$work/weir/bin
# cuDNN, cuBLAS and NCCL are opened by name: the toolkit's, then the pip
# wheels' (nvidia-cudnn-cu13, nvidia-nccl-cu13) that the machine's Python has.
library_path=$work/weir/lib:/usr/local/cuda/lib64
for wheel_dir in $(limit=30 limited python3 -c 'import nvidia, os; p = nvidia.__path__[0]; print(" ".join(os.path.join(p, d, "lib") for d in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, d, "lib"))))' 2>/dev/null); do
  library_path=$library_path:$wheel_dir
done
# Only Weir's programs see the bundle's libraries (Debian's libssl, zlib...):
# python3 and nvidia-smi keep the machine's own.
weir() { local program=$1; shift; LD_LIBRARY_PATH=$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} limited "$bin/$program" "$@"; }
gpu=${WEIR_GPU:-cuda}
limit=30 limited nvidia-smi -L 2>&1 | tee "$out/device.log"
gpus=$(grep -c '^GPU' "$out/device.log")

# The largest relative difference between two runs' `step N loss: X` lines,
# against a tolerance: compare_losses WANT GOT LABEL TOLERANCE.
compare_losses() {
  limit=30 limited python3 - "$@" <<'EOF'
import re, sys
def losses(path):
    return [float(m.group(1)) for m in re.finditer(r"step \d+ loss: (\S+)", open(path).read())]
want, got, label, tolerance = losses(sys.argv[1]), losses(sys.argv[2]), sys.argv[3], float(sys.argv[4])
worst = max((abs(a - b) / abs(a) for a, b in zip(want, got)), default=float("nan"))
ok = len(want) == len(got) > 0 and worst <= tolerance
print(f"{label}: {len(got)} of {len(want)} steps, largest relative loss difference {worst:.3g}"
      f" ({'within' if ok else 'NOT within'} {tolerance:g})")
EOF
}

run_stage() {
  local stage=$1
  echo "=== $stage"
  case $stage in
    tests)
      (cd "$work" && LD_LIBRARY_PATH=$library_path limit=540 limited "$bin/weir_cuda_tests" --gtest_output=xml:"$out/cuda_tests.xml" 2>&1) \
        > "$out/tests.log"
      status=$?
      grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.log"; grep -E '^\[  FAILED  \]' "$out/tests.log" | head -40
      # Ended without gtest's summary (a crash, or the time limit): name the test it was in.
      if ! grep -q '^\[==========\] .* ran\.' "$out/tests.log"; then
        echo "weir_cuda_tests ended with status $status in: $(grep -E '^\[ RUN      \]' "$out/tests.log" | tail -1)"
      fi
      # A parameterized test's line reads "[  FAILED  ] Cuda/Suite.Test/cuda0, where GetParam() = ...".
      failed=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/tests.log" | awk '{sub(/,$/, "", $4); print $4}' | sort -u | paste -sd: -)
      if [[ -n $failed ]]; then
        echo "the failed tests again, waiting for each step (WEIR_SYNC_STEPS=1):"
        (cd "$work" && WEIR_SYNC_STEPS=1 LD_LIBRARY_PATH=$library_path limit=120 limited "$bin/weir_cuda_tests" --gtest_filter="$failed" 2>&1) \
          > "$out/tests-sync.log"
        grep -E '^\[  (PASSED|FAILED) ' "$out/tests-sync.log"
      fi ;;
    lenet)
      lenet=(train --model lenet --data synthetic --steps 20 --batch 64 --optimizer momentum --lr 0.05 --print-losses)
      weir graph-runner "${lenet[@]}" --device cpu > "$work/lenet-cpu.txt" 2>&1
      weir graph-runner "${lenet[@]}" --device "$gpu" > "$work/lenet-cuda.txt" 2>&1
      WEIR_SYNC_STEPS=1 weir graph-runner "${lenet[@]}" --device "$gpu" > "$work/lenet-cuda-sync.txt" 2>&1
      weir graph-runner launch -n 1 -- "$bin/graph-runner" "${lenet[@]}" --device "$gpu" > "$work/lenet-nccl.txt" 2>&1
      weir graph-runner launch -n 1 -- "$bin/graph-runner" "${lenet[@]}" --device "$gpu" > "$work/lenet-nccl-again.txt" 2>&1
      # Without buckets each gradient is its own buffer, as in the run alone.
      echo '{"fuse_all_reduce_ops": false}' > "$work/unfused.json"
      weir graph-runner launch -n 1 -- "$bin/graph-runner" "${lenet[@]}" --device "$gpu" --strategy "$work/unfused.json" \
        > "$work/lenet-nccl-unfused.txt" 2>&1
      compare_losses "$work/lenet-cpu.txt" "$work/lenet-cuda.txt" "lenet cuda vs cpu" 1e-4
      compare_losses "$work/lenet-cuda-sync.txt" "$work/lenet-cuda.txt" "lenet cuda running ahead vs waiting for each step" 0
      compare_losses "$work/lenet-cpu.txt" "$work/lenet-nccl.txt" "lenet nccl vs cpu" 1e-4
      compare_losses "$work/lenet-cuda.txt" "$work/lenet-nccl.txt" "lenet nccl vs cuda alone" 1e-4
      compare_losses "$work/lenet-nccl.txt" "$work/lenet-nccl-again.txt" "lenet nccl run twice" 0
      compare_losses "$work/lenet-cuda.txt" "$work/lenet-nccl-unfused.txt" "lenet nccl without buckets vs cuda alone" 0
      grep -h -E "ms_per_step|examples_per_second|error" "$work"/lenet-*.txt
      # Every run's output, for the losses step by step.
      tail -n +1 "$work"/lenet-*.txt > "$out/lenet-runs.txt" ;;
    comm)
      lenet=(train --model lenet --data synthetic --steps 12 --batch 64 --optimizer momentum --lr 0.05 --print-losses)
      echo '{"gradient_merge": true, "gradient_merge_configs": {"k_steps": 2}}' > "$work/merge.json"
      echo '{"dgc": true, "dgc_configs": {"rampup_begin_step": 2, "rampup_step": 4, "sparsity": [0.75, 0.99]}}' > "$work/dgc.json"
      echo '{"localsgd": true, "localsgd_configs": {"k_steps": 3, "begin_step": 2}}' > "$work/localsgd.json"
      echo '{"adaptive_localsgd": true, "adaptive_localsgd_configs": {"init_k_steps": 2}}' > "$work/adaptive.json"
      weir graph-runner "${lenet[@]}" --device cpu --strategy "$work/merge.json" > "$work/merge-cpu.txt" 2>&1
      weir graph-runner "${lenet[@]}" --device "$gpu" --strategy "$work/merge.json" > "$work/merge-cuda.txt" 2>&1
      compare_losses "$work/merge-cpu.txt" "$work/merge-cuda.txt" "gradient merge cuda vs cpu" 1e-4
      grep -h -E "gradient merge|error" "$work"/merge-*.txt
      if (( gpus < 2 )); then echo "one GPU: DGC and LocalSGD need a world of two"; return; fi
      for strategy in dgc localsgd adaptive; do
        weir graph-runner launch -n 2 -- "$bin/graph-runner" "${lenet[@]}" --device cpu --strategy "$work/$strategy.json" \
          > "$work/$strategy-cpu.txt" 2>&1
        weir graph-runner launch -n 2 -- "$bin/graph-runner" "${lenet[@]}" --device "$gpu" --strategy "$work/$strategy.json" \
          > "$work/$strategy-cuda.txt" 2>&1
        compare_losses "$work/$strategy-cpu.txt" "$work/$strategy-cuda.txt" "$strategy 2 GPUs vs 2 CPU processes" 1e-4
        grep -h -E "rank 0\] (dgc|localsgd|adaptive)|error" "$work/$strategy"-*.txt
      done ;;
    infer)
      # Fixed batches, so the FLOP estimates count every example; initial
      # weights, uncalibrated (latency does not depend on the values).
      limit=60 limited python3 -c "
import numpy as np
for b in (1, 64): np.save('$work/img%d.npy' % b, np.random.RandomState(b).rand(b, 3, 224, 224).astype(np.float32))
for b in (1, 32): np.save('$work/ids%d.npy' % b, np.random.RandomState(b).randint(0, 1000, (b, 128)).astype(np.int64))"
      for batch in 1 64; do
        echo "resnet50 batch $batch"
        weir weir_zoo_export resnet50 "$work/r50-$batch.weir" --channels 3 --image-size 224 --classes 1000 --batch "$batch" --calibrate 0 >/dev/null
        for sync in 0 1; do
          echo "WEIR_SYNC_STEPS=$sync"
          WEIR_SYNC_STEPS=$sync weir graph-runner bench "$work/r50-$batch.weir" --device "$gpu" -i "x=$work/img$batch.npy" \
            --warmup 10 --iterations 100 2>&1 | grep -E "latency|flops|error"
        done
      done
      for batch in 1 32; do
        echo "bert-base seq 128 batch $batch"
        weir weir_zoo_export bert "$work/bert-$batch.weir" --layers 12 --hidden 768 --heads 12 --seq 128 --batch "$batch" --calibrate 0 >/dev/null
        for sync in 0 1; do
          echo "WEIR_SYNC_STEPS=$sync"
          WEIR_SYNC_STEPS=$sync weir graph-runner bench "$work/bert-$batch.weir" --device "$gpu" -i "x=$work/ids$batch.npy" \
            --warmup 10 --iterations 100 2>&1 | grep -E "latency|flops|error"
        done
      done ;;
    train)
      limit=240 weir graph-runner train --model resnet50 --device "$gpu" --amp fp16 --batch 128 --data synthetic --image-size 224 \
        --classes 1000 --steps 30 --optimizer momentum --lr 0.01 2>&1 | grep -E "ms_per_step|examples_per_second|step_flops|final_loss|error" ;;
    profile)
      # Where a ResNet-50 AMP training step's time goes: the trace's events
      # (a profiled run waits for each node, so each is the node's enqueueing
      # and device time) summed by op type, against the step time.
      limit=240 weir graph-runner train --model resnet50 --device "$gpu" --amp fp16 --batch 128 --data synthetic --image-size 224 \
        --classes 1000 --steps 6 --optimizer momentum --lr 0.01 --profile "$out/resnet50-train-trace.json" 2>&1 |
        grep -E "ms_per_step|error"
      limit=60 limited python3 - "$out/resnet50-train-trace.json" <<'EOF'
import collections, json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
if not events: sys.exit("no events in the trace")
span_ms = (max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)) / 1e3
by_op = collections.defaultdict(lambda: [0, 0.0])
for e in events:
    by_op[e["cat"]][0] += 1
    by_op[e["cat"]][1] += e["dur"] / 1e3
total = sum(ms for _, ms in by_op.values())
print(f"{len(events)} events over {span_ms:.1f} ms; the nodes' time {total:.1f} ms")
for op, (count, ms) in sorted(by_op.items(), key=lambda item: -item[1][1])[:20]:
    print(f"  {op:28s} {count:6d} events {ms:9.2f} ms ({ms / count * 1e3:8.1f} us each)")
EOF
      ;;
    nccl2)
      if (( gpus < 2 )); then echo "one GPU: the 2-GPU comparison needs two"; return; fi
      lenet=(train --model lenet --data synthetic --steps 20 --batch 64 --optimizer momentum --lr 0.05 --print-losses)
      weir graph-runner launch -n 2 -- "$bin/graph-runner" "${lenet[@]}" --device "$gpu" > "$work/lenet-nccl2.txt" 2>&1
      compare_losses "$work/lenet-nccl.txt" "$work/lenet-nccl2.txt" "lenet 2 GPUs vs 1" 1e-5
      ;;
    *) echo "unknown stage '$stage' (tests lenet comm infer train profile nccl2)" ;;
  esac
}

for stage in "${stages[@]}"; do
  run_stage "$stage" 2>&1 | tee "$out/$stage.log"
done
