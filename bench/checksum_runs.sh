#!/bin/bash
# Determinism across a change: fourteen stoke-bench runs (Fashion-MNIST, a JPEG folder, its tar
# shards, and the recipes' steps: policies, AugMix, timm, random_affine, erasing, MixUp/CutMix
# with repeats), one line each with the run's checksum and output checksum. Run it with the
# build before a change and the build after, and diff the two files: a refactor must leave every
# line as it was.
#
#   bench/checksum_runs.sh BUILD_DIR OUT_FILE [DATA_DIR]
#
# DATA_DIR (default /tmp/stoke-checksum-data) receives the JPEG corpus (stoke-mkdata
# jpeg-corpus, 3,000 images) and its shards (stoke-pack, 250 a shard) the first time.
set -u
build=$1
out=$2
data=${3:-/tmp/stoke-checksum-data}
bench=$build/bin/stoke-bench
corpus=$data/corpus
shards=$data/shards
if [ ! -d "$corpus" ]; then
  "$build/bin/stoke-mkdata" jpeg-corpus --out "$corpus" > /dev/null || exit 1
fi
if [ ! -f "$shards/train-0011.tar" ]; then
  "$build/bin/stoke-pack" --no-progress --data "$corpus" --out "$shards/train-%04d.tar" \
    --shard-samples 250 > /dev/null || exit 1
fi
: > "$out"
run() {
  local name=$1
  shift
  local sums
  sums=$("$bench" --json "$@" 2> /dev/null | tail -1 | python3 -c 'import json, sys
try:
    d = json.loads(sys.stdin.read())
    print(d.get("checksum"), d.get("output_checksum"))
except ValueError as e:
    print("ERROR", e)')
  echo "$name $sums" | tee -a "$out"
}
S="$shards/train-{0000..0011}.tar"
run fmnist_w2_e2 --workers 2 --epochs 2
run fmnist_w0_f16_cpu2 --workers 0 --batch 64 --dtype float16 --devices cpu:2
run jpeg224_w2 --data "$corpus" --workers 2
run jpeg96_f32_cpu2_nhwc --data "$corpus" --workers 2 --size 96 --dtype float32 --devices cpu:2 \
  --layout nhwc
run shards224_w2 --data "$S" --workers 2
run shards128_w1_e2_s5 --data "$S" --workers 1 --epochs 2 --seed 5 --size 128
run v2recipe --data "$corpus" --workers 2 --size 96 --dtype float32 --devices cpu:2 --batch 64 \
  --pipeline "random_resized_crop 96 96 | horizontal_flip | trivial_augment_wide | random_erasing 0.1" \
  --mixup-alpha 0.2 --cutmix-alpha 1.0 --num-classes 24 --label-smoothing 0.1 --repeats 4
run policies --data "$corpus" --workers 2 --size 64 \
  --pipeline "random_resized_crop 64 64 | rand_augment | color_jitter 0.4 0.4 0.4 0.1 | random_grayscale 0.2"
run autoaug_affine --data "$corpus" --workers 2 --size 64 \
  --pipeline "resize_shorter 80 | center_crop 64 64 | auto_augment | random_affine 15 | gaussian_blur 3 | random_solarize 128 0.3"
run augmix --data "$corpus" --workers 2 --size 64 \
  --pipeline "random_resized_crop 64 64 | augmix | random_posterize 4 0.5 | random_equalize 0.5"
run timm --data "$corpus" --workers 2 --size 64 \
  --pipeline "random_resized_crop 64 64 | horizontal_flip | timm_augment rand-m9-mstd0.5-inc1"
run timm_augmix --data "$corpus" --workers 2 --size 64 \
  --pipeline "random_resized_crop 64 64 | timm_augment augmix-m5-w4-d2"
run eval_pad --workers 2 --size 28 --channels 1 \
  --pipeline "pad_random_crop 4 28 28 | vertical_flip | random_invert 0.5 | random_autocontrast 0.5 | random_adjust_sharpness 2 0.5"
run affine_bilinear --data "$corpus" --workers 2 --size 64 --dtype float32 \
  --pipeline "scale_jitter 64 96 | random_affine_bilinear -15 15 0.1 0.1 0.9 1.1 -10 10 | center_crop 64 64 | random_erasing 0.5"
