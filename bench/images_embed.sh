#!/usr/bin/env bash
# `xmc images embed` against the plain PyTorch-Python transcription of ViTModel (tests/reference/make_vision_fixtures.py,
# Debian's python3-torch), ViT-B/16-shaped (12 layers, 768 wide, 224 px), random weights: images per second on this
# machine. xmc's figure is the whole command (reading and decoding PNGs, resizing, normalising, the forward pass,
# writing the bank); the reference's is the forward pass alone on ready pixel tensors, at the same batch size and
# thread count. Alternated A B A B; medians.
# DEVICE=cuda runs both sides on the GPU (PYTHON names a python3 with torch; default Debian's /usr/bin/python3).
# Usage: bench/images_embed.sh [build_dir] [images] [rounds]
set -euo pipefail
device=${DEVICE:-cpu}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
images=${2:-64}
rounds=${3:-2}
xmc="$build/app/xmc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }
threads=$(nproc)
mkdir -p "$tmp/vit" "$tmp/pics"
cat >"$tmp/vit/config.json" <<'JSON'
{"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
 "intermediate_size": 3072, "image_size": 224, "patch_size": 16, "num_channels": 3, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "qkv_bias": true}
JSON
"$python" - "$tmp/pics" "$images" <<'PY'
import struct, sys, zlib, random
out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
with open(f"{out}/../list.txt", "w") as listing:
    for i in range(n):
        w, h = 320, 240
        rows = b''.join(b'\x00' + rng.randbytes(3 * w) for _ in range(h))
        png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows, 1)) + chunk(b'IEND', b'')
        open(f"{out}/{i}.png", "wb").write(png)
        listing.write(f"pics/{i}.png\n")
PY
cat >"$tmp/reference.py" <<PY
import sys, time, torch
sys.path.insert(0, "$here/tests/reference")
from make_vision_fixtures import forward, make_weights
torch.set_num_threads($threads)
c = dict(model_type="vit", hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, image_size=224,
         patch_size=16, num_channels=3, layer_norm_eps=1e-12, hidden_act="gelu")
device = torch.device("$device")
w = {name: t.to(device) for name, t in make_weights(c, torch.Generator().manual_seed(0)).items()}
pixels = torch.randn($images, 3, 224, 224)
with torch.no_grad():
    forward(c, w, pixels[:2].to(device))
    if device.type == "cuda": torch.cuda.synchronize()
    start = time.perf_counter()
    for b in range(0, $images, 32):  # the pixels travel to the device per batch, as xmc's do
        forward(c, w, pixels[b:b + 32].to(device))[:1].cpu()
    if device.type == "cuda": torch.cuda.synchronize()
    print("%.2f" % ($images / (time.perf_counter() - start)))
PY
median() { python3 -c "import statistics,sys; print('%.2f' % statistics.median(map(float, sys.argv[1:])))" "$@"; }
ours=() reference=()
for ((r = 1; r <= rounds; ++r)); do
  start=$(date +%s.%N)
  "$xmc" images embed --model "$tmp/vit" --list "$tmp/list.txt" --out "$tmp/bank.npy" --batch-size 32 --threads "$threads" --device "$device" >/dev/null 2>&1
  ours+=("$(python3 -c "print($images / ($(date +%s.%N) - $start))")")
  reference+=("$("$python" "$tmp/reference.py")")
done
a=$(median "${ours[@]}"); b=$(median "${reference[@]}")
echo "machine: $threads cores, device $device; $(date -u +%F); ViT-B/16 shape, random weights, $images images of 320 x 240, batch 32"
echo "xmc images embed (whole command): $a images/s; PyTorch-Python transcription (forward only): $b images/s; ratio $(python3 -c "print('%.2f' % ($a / $b))") (target >= 1)"
