#!/usr/bin/env bash
# Here (no GPU): the libraries of tile_fit_check.sh. .carry/lot.tar.xz (lottery_stage.sh none: this
# tree with the lab host knobs, folder rel) and .carry/lot-noepi.tar.xz (this tree with
# lab/variants/noepi.patch: the epilogue's O and LSE stores skipped at run time, folder noepi).
# Then on the GPU, carrying both archives and .carry/fa3_site.tar.xz:
#   bash lab/probes/tile_fit_check.sh rel=rel tma=rel,FP8ATTN_LAB_SHORT_TILE_KEYS=16384 \
#     trim=rel,FP8ATTN_LAB_TRIM_TILE_KEYS=16384 noepi=noepi
set -euo pipefail
cd "$(dirname "$0")/../.."
bash lab/probes/lottery_stage.sh none
bash lab/probes/patch_stage.sh noepi=noepi.patch
