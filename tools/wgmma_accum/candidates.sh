#!/usr/bin/env bash
# The CPU model's FA3 FP8 and fp8attn-E4M3-P error on the committed Qwen fixtures (one query head,
# 2048 tokens, non-causal) under candidate accumulation rules, beside the first model (acc=hopper)
# and FP32 accumulation: which rules can produce the GPU's large kernel-only errors at all, before
# the microbenchmark says which one the H200 has. Writes results/accum-rule-candidates.json
# (fp8attn-eval's records carry the command, commit and machine). ~5-10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
EVAL=${EVAL:-build-model/tools/eval/fp8attn-eval}
A=":acc=aligned:acc_bits=13"
schemes="fa3-fp8,fa3-fp8-hopper,fa3-fp8${A},fa3-fp8${A}:acc_round=down,fa3-fp8${A}:acc_round=nearest"
schemes+=",fa3-fp8${A}:acc_c_aligned=0,fa3-fp8:acc=aligned:acc_bits=14"
schemes+=",fa3-fp8:block=192:l_rounded=1,fa3-fp8:block=192:l_rounded=1:acc=hopper,fa3-fp8:block=192:l_rounded=1${A}"
files=$(ls data/fixtures/qwen2.5-coder-1.5b-layer*.safetensors | paste -sd,)
"$EVAL" --data "$files" --mask none --scheme "$schemes" --quiet --json results/accum-rule-candidates.json
echo "wrote results/accum-rule-candidates.json"
