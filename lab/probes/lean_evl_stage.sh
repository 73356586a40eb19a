#!/usr/bin/env bash
# Here (no GPU): the libraries of lab/probes/lean_evl_check.sh, the twelfth session's staged
# probes: rel (this tree + the lab host knobs, lottery_stage.sh none), lean
# (lab/variants/epi-lean.patch), evl (lab/variants/kv-evict-last.patch) and both (the two
# patches together; they touch different files), each .carry/lot-NAME.tar.xz (patch_stage.sh);
# and the bundle (scripts/stage_gpu.sh BUNDLE=1 NO_CAPTURES=1) for the one-pass probe's library.
#   bash lab/probes/lean_evl_stage.sh
# Then on the GPU, carrying .carry/lot*.tar.xz, .carry/bundle.tar.xz and .carry/fa3_site.tar.xz:
#   bash lab/probes/lean_evl_check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=1 NO_CAPTURES=1 scripts/stage_gpu.sh | tail -3 || true  # its size check may warn
bash lab/probes/lottery_stage.sh none
bash lab/probes/patch_stage.sh lean=epi-lean.patch evl=kv-evict-last.patch \
  both=epi-lean.patch+kv-evict-last.patch
du -ch .carry/lot*.tar.xz .carry/bundle.tar.xz .carry/fa3_site.tar.xz | tail -1
