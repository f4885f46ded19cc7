# Source on the GPU machine, from the tree root, in every command: keeps whatever part of
# the pack came with this call under $OFFLINE_ROOT/pack, installs the wheels once, rebuilds
# the embedded model once all three parts are there, and exports PYTHONPATH (tree + wheels)
# and OFFLINE_MODEL.
#   source tools/offline_gpu/setup.sh
export OFFLINE_ROOT=${OFFLINE_ROOT:-/tmp}  # where the pack, wheels, model and job logs go
mkdir -p "$OFFLINE_ROOT/pack" "$OFFLINE_ROOT/site" "$OFFLINE_ROOT/model" "$OFFLINE_ROOT/jobs"
cp -n .pack*/part0* .pack*/model.sha256 "$OFFLINE_ROOT/pack/" 2>/dev/null || true
if [ -d .pack1/whl ] && [ ! -e "$OFFLINE_ROOT/site/.installed" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$OFFLINE_ROOT/site" .pack1/whl/*.whl && touch "$OFFLINE_ROOT/site/.installed"
fi
export OFFLINE_MODEL="$OFFLINE_ROOT/model/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -e "$OFFLINE_MODEL" ] && [ -e "$OFFLINE_ROOT/pack/part00" ] && [ -e "$OFFLINE_ROOT/pack/part01" ] \
    && [ -e "$OFFLINE_ROOT/pack/part02" ]; then
  (cd "$OFFLINE_ROOT/pack" && cat part00 part01 part02 > model.gguf.xz && sha256sum -c --quiet model.sha256 \
    && xz -d -c model.gguf.xz > "$OFFLINE_MODEL.tmp" && mv "$OFFLINE_MODEL.tmp" "$OFFLINE_MODEL") \
    || echo "setup: the model parts do not reassemble (sha256 mismatch): run pack.sh again"
  rm -f "$OFFLINE_ROOT/pack/model.gguf.xz"
fi
export PYTHONPATH="$PWD:$OFFLINE_ROOT/site" PYTHONUNBUFFERED=1
echo "setup: wheels $([ -e "$OFFLINE_ROOT/site/.installed" ] && echo installed || echo missing)," \
  "model $([ -e "$OFFLINE_MODEL" ] && echo "$OFFLINE_MODEL" || echo "parts $(ls "$OFFLINE_ROOT/pack" | grep -c '^part')/3")"
