#!/usr/bin/env bash
# Here (no GPU): the libraries of tile_fit_check.sh. .carry/lot.tar.xz (lottery_stage.sh none: this
# tree with the lab host knobs, folder rel) and .carry/lot-noepi.tar.xz (lab/variants/noepi.patch:
# the epilogue's O and LSE stores skipped at run time). (The eleventh session's long-trim and
# fa3-numerics patches became the shipped kernels; their files are in git history at 77b924e.)
# Then on the GPU, carrying the archives and .carry/fa3_site.tar.xz:
#   bash lab/probes/tile_fit_check.sh rel=rel noepi=noepi
# (The `trim=rel,FP8ATTN_LAB_TRIM_TILE_KEYS=16384` configuration of the twelfth session's runs sent
# non-causal calls to the TMA-store kernel; since 2a7fee3 every call takes it, and the knob left
# host-knobs.patch with the register-epilogue kernels in the twenty-fifth session.)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash lab/probes/lottery_stage.sh none
bash lab/probes/patch_stage.sh noepi=noepi.patch
