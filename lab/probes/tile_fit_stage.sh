#!/usr/bin/env bash
# Here (no GPU): the libraries of tile_fit_check.sh. .carry/lot.tar.xz (lottery_stage.sh none: this
# tree with the lab host knobs, folder rel), .carry/lot-noepi.tar.xz (lab/variants/noepi.patch: the
# epilogue's O and LSE stores skipped at run time) and .carry/lot-ltrim.tar.xz
# (lab/variants/long-trim.patch: the long-tile kernel with the trimmed first block).
# Then on the GPU, carrying the archives and .carry/fa3_site.tar.xz:
#   bash lab/probes/tile_fit_check.sh rel=rel tma=rel,FP8ATTN_LAB_SHORT_TILE_KEYS=16384 \
#     trim=rel,FP8ATTN_LAB_TRIM_TILE_KEYS=16384 noepi=noepi ltrim=ltrim
set -euo pipefail
cd "$(dirname "$0")/../.."
bash lab/probes/lottery_stage.sh none
bash lab/probes/patch_stage.sh noepi=noepi.patch ltrim=long-trim.patch
