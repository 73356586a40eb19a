#!/usr/bin/env bash
# Here (no GPU): FlashAttention-3's PyPI wheel (fa3-fwd==0.0.3, the harness's peer) unpacked and
# recompressed with xz into .carry/fa3_site.tar.xz (~9 MB; the wheel is ~28 MB, its library 105 MB
# unpacked), which scripts/gpu/fa3.sh's install_fa3 unpacks into /tmp/site on the GPU machine. The
# wheel comes from .whl/ (downloaded there with pip when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl .carry
compgen -G ".whl/fa3_fwd-0.0.3-*.whl" >/dev/null ||
  python3 -m pip download -q --no-deps fa3-fwd==0.0.3 -d .whl
whl=$(ls .whl/fa3_fwd-0.0.3-*.whl | head -1)
tmp=$(mktemp -d)
python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$whl" "$tmp"
tar -C "$tmp" -cf - . | xz -9e -T2 > .carry/fa3_site.tar.xz
rm -rf "$tmp"
echo "pack_fa3: $(sha256sum "$whl" | cut -c1-16) $(basename "$whl") -> .carry/fa3_site.tar.xz $(du -h .carry/fa3_site.tar.xz | cut -f1)"
