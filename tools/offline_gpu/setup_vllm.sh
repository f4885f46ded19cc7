# Source on the GPU machine after setup.sh, from the tree root, in every command that carries a
# .packvNN folder of pack_vllm.sh or runs vLLM: keeps the parts under $OFFLINE_ROOT/packv, drops
# a damaged one (sha256) so that it can come again, and once all have come installs the wheels
# once into $OFFLINE_ROOT/vllm-site (pip --target, no index, no deps: the image's torch stays as
# it is). Then puts that folder on PYTHONPATH and sets vLLM for a machine without flashinfer or
# network. OFFLINE_PYTHON: the interpreter that installs (python3 by default).
#   source tools/offline_gpu/setup.sh && source tools/offline_gpu/setup_vllm.sh
_setup_vllm() {
  local root=${OFFLINE_ROOT:-/tmp} py=${OFFLINE_PYTHON:-python3}
  local pv site d f n have want need torch_version
  pv="$root/packv"; site="$root/vllm-site"
  mkdir -p "$pv"
  # A .packv01 of another pack: forget the parts of the old one (parts that came before any
  # .packv01 are kept, and checked below).
  if [ -e .packv01/vllm.sha256 ] && ! cmp -s .packv01/vllm.sha256 "$pv/vllm.sha256"; then
    [ -e "$pv/vllm.sha256" ] && rm -f "$pv"/vpart*
    cp .packv01/vllm.sha256 .packv01/count "$pv/"
  fi
  for d in .packv[0-9][0-9]; do
    [ -d "$d" ] && { cp -n "$d"/vpart* "$pv/" 2>/dev/null || true; }
  done
  want=$(head -n 1 "$pv/vllm.sha256" 2>/dev/null | cut -d ' ' -f 1)
  if [ -n "$want" ] && [ "$(cat "$site/.installed" 2>/dev/null)" != "$want" ]; then
    for f in "$pv"/vpart*; do
      [ -e "$f" ] || continue
      if ! grep " ${f##*/}\$" "$pv/vllm.sha256" | (cd "$pv" && sha256sum --status -c); then
        echo "setup_vllm: ${f##*/} is damaged (sha256 mismatch), dropped: carry .packv${f##*vpart} again"
        rm -f "$f"
      fi
    done
  fi
  n=$(cat "$pv/count" 2>/dev/null || echo "?")
  have=$(find "$pv" -maxdepth 1 -name 'vpart*' | wc -l)
  if [ "$n" != "?" ] && [ "$have" -ge "$n" ] && [ "$(cat "$site/.installed" 2>/dev/null)" != "$want" ]; then
    echo "setup_vllm: all $n parts are here: installing"
    rm -rf "$pv/whl" "$site.new"
    if (cd "$pv" && cat vpart* > vllm-wheels.tar.xz && sha256sum --quiet -c vllm.sha256 \
        && xz -d -c vllm-wheels.tar.xz | tar -x -C "$pv") \
        && "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site.new" \
          "$pv"/whl/*.whl; then
      rm -rf "$site"; mv "$site.new" "$site"; echo "$want" > "$site/.installed"
      need=$(sed -n 's/^Requires-Dist: torch==\([^ ;]*\).*/\1/p' "$site"/vllm-*.dist-info/METADATA 2>/dev/null)
      torch_version=$("$py" -c "import importlib.metadata as m; print(m.version('torch'))" 2>/dev/null)
      if [ -n "$need" ] && [ "${torch_version%%+*}" != "$need" ]; then
        echo "setup_vllm: warning: vllm was built for torch $need, this machine has torch ${torch_version:-none}"
      fi
    else
      echo "setup_vllm: the parts do not install (whole sha256 or pip failed, above): run pack_vllm.sh again"
      rm -rf "$site.new"
    fi
    rm -rf "$pv/whl" "$pv/vllm-wheels.tar.xz"
  fi
  if [ -e "$site/.installed" ]; then
    case ":${PYTHONPATH:-}:" in *":$site:"*) ;; *) export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site" ;; esac
    # No flashinfer is packed: its sampler probe would fail at engine start. No network: no usage report.
    export OFFLINE_VLLM_SITE="$site" VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
    d=$(find "$site" -maxdepth 1 -name 'vllm-*.dist-info' | head -n 1)
    d=${d##*/vllm-}
    echo "setup_vllm: vllm ${d%.dist-info} installed at $site"
  else
    echo "setup_vllm: parts $have/$n"
  fi
}
_setup_vllm
unset -f _setup_vllm
