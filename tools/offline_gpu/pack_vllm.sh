#!/usr/bin/env bash
# Pack vLLM for the GPU machine without network access: vllm 0.25.0 and the wheels it imports on
# the offline path (vllm.LLM on one GPU, LoRA, no server) that the image lacks. Its torch 2.11.0
# (CUDA 13), transformers, tokenizers, numpy, ... stay as they are. The wheels are re-zipped
# uncompressed (same files, same RECORD) so that xz -9 packs them 30% smaller (xz of the wheels
# as they come: 2%), put in one tar.xz and split into .packv01, .packv02, ... (ignored by git,
# one per transfer); .packv01 also holds the count and the sha256 of every part and of the
# whole. setup_vllm.sh installs them there. About 7 min here (xz on 2 cores).
# Usage: tools/offline_gpu/pack_vllm.sh
#   WHEELS_FROM=DIR: pack the wheels in DIR (no download); PACK_DIR=DIR: where .packvNN go
#   (default: the tree root); PART_BYTES: part size (default 38 MB); PYVER: 3.12 by default.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
out=${PACK_DIR:-$root}
part_bytes=${PART_BYTES:-38000000}
# Pinned as pip resolves vllm==0.25.0 beside torch 2.11.0 / transformers 5.17.0 for Python 3.12.
# xgrammar + llguidance: imported by vllm.v1.request's class annotations; apache-tvm-ffi: by
# xgrammar. depyf (+ astor, dill): torch.compile's error path with CUDA graphs. The last line:
# pydantic & co., which the image has only through typer (not checked there).
WHEELS=(
  vllm==0.25.0 xgrammar==0.2.3 apache-tvm-ffi==0.1.9 llguidance==1.7.6
  openai==3.63.0 httpx2==2.17.0 httpcore2==2.17.0 truststore==0.10.5 jiter==0.19.0 sniffio==1.3.1
  openai-harmony==0.0.8 fastapi==0.136.3 starlette==1.10.0 partial-json-parser==0.2.1.1.post7
  aiohttp==3.14.5 yarl==1.25.1 propcache==0.5.4 multidict==7.2.1 frozenlist==1.8.0 attrs==26.1.0
  aiosignal==1.4.0 aiohappyeyeballs==2.7.1 pyzmq==27.3.0 cbor2==6.3.0 cloudpickle==3.1.3
  msgspec==0.23.0 pybase64==1.5.1 cachetools==8.0.3 uvloop==0.23.0 py-cpuinfo==9.0.0
  prometheus-client==0.26.0 einops==0.8.2 depyf==0.20.0 astor==0.8.1 dill==0.4.1
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  annotated-doc==0.0.7 typing-extensions==4.16.0
)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/dl" "$tmp/whl"
if [ -n "${WHEELS_FROM:-}" ]; then
  cp "$WHEELS_FROM"/*.whl "$tmp/dl/"
else
  plat=(); for n in 5 17 24 26 27 28 31; do plat+=(--platform "manylinux_2_${n}_x86_64"); done
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${PYVER:-3.12}" \
    --implementation cp "${plat[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d "$tmp/dl" "${WHEELS[@]}"
  got=$(find "$tmp/dl" -name '*.whl' | wc -l)
  [ "$got" -eq "${#WHEELS[@]}" ] || { echo "pack_vllm: $got wheels, expected ${#WHEELS[@]}"; exit 1; }
fi
python3 - "$tmp/dl" "$tmp/whl" <<'EOF'
import sys, zipfile
from pathlib import Path
src, dst = map(Path, sys.argv[1:])
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(dst / wheel.name, "w", zipfile.ZIP_STORED) as zout:
        for old in zin.infolist():
            new = zipfile.ZipInfo(old.filename, old.date_time)
            new.external_attr, new.create_system = old.external_attr, old.create_system
            zout.writestr(new, zin.read(old), zipfile.ZIP_STORED)
EOF
tar -C "$tmp" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - whl \
  | xz -T0 -9 > "$tmp/vllm-wheels.tar.xz"
(cd "$tmp" && split -b "$part_bytes" -d -a 2 --numeric-suffixes=1 vllm-wheels.tar.xz vpart)
n=$(find "$tmp" -maxdepth 1 -name 'vpart*' | wc -l)
for d in "$out"/.packv[0-9][0-9]; do [ -d "$d" ] && rm -rf "$d"; done
for i in $(seq -f %02g 1 "$n"); do
  d="$out/.packv$i"; mkdir -p "$d"; mv "$tmp/vpart$i" "$d/"
  if [ "$out" = "$root" ]; then
    grep -qx "/.packv$i/" "$root/.git/info/exclude" 2>/dev/null || echo "/.packv$i/" >> "$root/.git/info/exclude"
  fi
done
(cd "$tmp" && sha256sum vllm-wheels.tar.xz && cd "$out" && sha256sum .packv*/vpart* | sed 's#\.packv[0-9]*/##') \
  > "$out/.packv01/vllm.sha256"
echo "$n" > "$out/.packv01/count"
echo "pack_vllm: $(find "$tmp/whl" -name '*.whl' | wc -l) wheels, $(du -b "$tmp/vllm-wheels.tar.xz" | cut -f1) bytes (tar.xz) in $n parts: .packv01 .. .packv$(printf %02d "$n")"
