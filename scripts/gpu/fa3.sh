# Sourced on the GPU machine (scripts/gpu_session.sh, the lab probes): install_fa3 makes
# FlashAttention-3 (PyPI fa3-fwd==0.0.3) importable from /tmp/site, put first on PYTHONPATH: as
# an earlier call on this warm machine left it, else from .carry/fa3_site.tar.xz
# (scripts/pack_fa3.sh) or the wheel carried in .whl/, else it says it is not importable (the
# harness then records FA3 as failed, never drops it).
install_fa3() {
  if ! python3 -c "import sys; sys.path.insert(0, '/tmp/site'); import fa3_fwd_interface" 2>/dev/null; then
    if [[ -f .carry/fa3_site.tar.xz ]]; then
      # The wheel's files recompressed (scripts/pack_fa3.sh: 9 MB against the wheel's 28 MB), so
      # that FA3 travels in the same call as the build and the captures.
      mkdir -p /tmp/site && tar -xJf .carry/fa3_site.tar.xz -C /tmp/site
    elif compgen -G ".whl/fa3_fwd-*.whl" >/dev/null; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/fa3_fwd-*.whl
    else
      echo "neither .carry/fa3_site.tar.xz nor .whl/fa3_fwd-*.whl carried and none installed in /tmp/site: FA3 is not importable"
    fi
  fi
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
}
