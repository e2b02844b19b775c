#pragma once
// A declarative, serializable description of how one sample becomes an output image.
//
// Thread-safety: a Pipeline is a value type; concurrent const access is safe.
//
// A pipeline is a list of steps applied in order after decoding, ending in an image of exactly
// output_height() x output_width() x output_channels() uint8 pixels. Random steps draw from a
// generator seeded only by (seed, epoch, global sample position), so the same sample at the same
// position always produces the same bytes, whatever process or thread runs it.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoke {

enum class StepKind : std::uint32_t {
  kResizeShorter = 1,      // scale so the shorter side equals `size`
  kResize = 2,             // scale to exactly height x width
  kCenterCrop = 3,         // crop height x width around the centre (pads with 0 if larger)
  kRandomResizedCrop = 4,  // torchvision RandomResizedCrop(scale, ratio) to height x width
  kHorizontalFlip = 5,     // mirror left-right with probability `probability`
  kPadRandomCrop = 6,      // pad `pad` pixels of 0 on every side, then crop height x width
  kColorJitter = 7,        // torchvision ColorJitter: four factors, applied in a random order
  kVerticalFlip = 8,       // mirror top-bottom with probability `probability`
  kScaleJitter = 9,        // scale so the shorter (longer) side is a size in [size, size_max]
  kBoxCrop = 10,           // random_resized_crop whose window keeps min_visible of some box
  // Photometric steps, torchvision's v2 ops on uint8 images; each applies with `probability`
  // (1 for the plain steps, torchvision's p for the random_* ones).
  kGrayscale = 11,        // F.rgb_to_grayscale, keeping the channel count
  kGaussianBlur = 12,     // kernel_width x kernel_height, sigma drawn from [sigma_min, sigma_max]
  kSolarize = 13,         // values >= threshold become 255 - value
  kPosterize = 14,        // keep the `bits` high bits
  kEqualize = 15,         // F.equalize (PIL's histogram equalization), per channel
  kAutocontrast = 16,     // stretch each channel's [min, max] to [0, 255]
  kAdjustSharpness = 17,  // blend with a 3x3 smoothed image by `factor`
  kInvert = 18,           // 255 - value
  // Augmentation policies (torchvision.transforms.v2's classes): each draws its ops per sample
  // from torchvision's op table and magnitude bins, with `fill` outside warped images. They act
  // on the image as it is after every crop, resize and flip (where torchvision's recipes put
  // them), so no such step may follow one.
  kTrivialAugmentWide = 19,  // TrivialAugmentWide(magnitude_bins)
  kRandAugment = 20,         // RandAugment(num_ops, magnitude, magnitude_bins)
  kAutoAugment = 21,         // AutoAugment(policy)
  // torchvision's RandomAffine: rotation, translation, scale and shears drawn per sample and
  // applied about the image centre, keeping its size; boxes and masks follow it.
  kRandomAffine = 22,
  // torchvision's RandomErasing(p, scale, ratio, value) on the final image: after normalization
  // when the output is float (where torchvision's and timm's recipes erase the normalized
  // tensor), on the uint8 pixels otherwise. It must be the last step.
  kRandomErasing = 23,
  // AugMix(severity, mixture_width, chain_depth, alpha, all_ops, interpolation, fill): the image
  // mixed with mixture_width chains of its own ops (ImageOp::kAugMix below).
  kAugMix = 24,
  // timm's policies from their config strings (timm.data.auto_augment), drawn per sample with
  // timm's op tables, magnitude noise and level functions, each op computed as Pillow computes
  // it. Like the policies above they act after every crop, resize and flip; RGB output only.
  kTimmRandAugment = 25,  // rand_augment_transform("rand-...")
  kTimmAugMix = 26,       // augment_and_mix_transform("augmix-..."), AugMixAugment
};

// What random_erasing writes into its rectangle.
enum class EraseFill : std::int32_t {
  kConstant = 0,      // erase_value[c] in channel c (torchvision's value=v)
  kPixelNoise = 1,    // N(0, 1) per value (torchvision's value="random", timm's mode="pixel")
  kChannelNoise = 2,  // N(0, 1) per channel, one colour (timm's mode="rand")
};

// How the geometric ops sample their input (torchvision's InterpolationMode): the nearest pixel,
// or grid_sample's bilinear blend of the four pixels around the point.
enum class Interpolation : std::int32_t { kNearest = 0, kBilinear = 1 };

// The fill of a step or op that may have none: torchvision's fill=None, where the points that a
// warp takes from outside the image read grid_sample's zeros (for nearest sampling, the same as
// a fill of 0; for bilinear, the edges blend with 0).
inline constexpr float kNoFill = -1.f;

// AutoAugment's policies (torchvision's AutoAugmentPolicy).
enum class AutoAugmentPolicy : std::int32_t { kImageNet = 0, kCifar10 = 1, kSvhn = 2 };

// Whether a step is one of timm's policies.
constexpr bool is_timm_augment(StepKind kind) {
  return kind == StepKind::kTimmRandAugment || kind == StepKind::kTimmAugMix;
}

// Whether a step is one of the augmentation policies (torchvision's or timm's).
constexpr bool is_policy(StepKind kind) {
  return (kind >= StepKind::kTrivialAugmentWide && kind <= StepKind::kAutoAugment) ||
         kind == StepKind::kAugMix || is_timm_augment(kind);
}

// Whether a step changes pixel values only, not where they are (the photometric steps).
constexpr bool is_photometric(StepKind kind) {
  return kind == StepKind::kColorJitter ||
         (kind >= StepKind::kGrayscale && kind <= StepKind::kInvert);
}

// Whether a step keeps the image's size and draws ops on it (Batch::applied_ops()): the
// photometric steps, the policies and random_affine.
constexpr bool works_in_place(StepKind kind) {
  return is_photometric(kind) || is_policy(kind) || kind == StepKind::kRandomAffine;
}

// The ops a sample can get, as Batch::applied_ops() reports them (stable numbers). Each is
// torchvision.transforms.v2.functional's op of that name on uint8 pixels; the geometric ones
// (13 to 16) take the nearest pixel, kAffineBilinear (20) blends the four around it, and all
// give the points that land outside the image one fill level in every channel. The blends
// (contrast, saturation, sharpness) weigh the other image by 1 - factor as torch takes it:
// args[1] holds it where the factor torchvision received was no float32 (the policies pass
// 1 + m in double, args[0] holds it rounded, and torch blends with float32(1.0 - (1 + m)) = -m);
// 0 there means 1 - args[0].
enum class ImageOp : std::int32_t {
  kNone = 0,
  kBrightness = 1,     // args[0]: factor (F.adjust_brightness)
  kContrast = 2,       // args[0]: factor (F.adjust_contrast); args[1]: 1 - factor (above)
  kSaturation = 3,     // args[0]: factor (F.adjust_saturation); args[1]: 1 - factor (above)
  kHue = 4,            // args[0]: factor in [-0.5, 0.5] (F.adjust_hue)
  kGrayscale = 5,      // F.rgb_to_grayscale, keeping the channel count
  kSolarize = 6,       // args[0]: threshold (F.solarize)
  kPosterize = 7,      // args[0]: bits (F.posterize)
  kEqualize = 8,       // F.equalize
  kAutocontrast = 9,   // F.autocontrast
  kSharpness = 10,     // args[0]: factor (F.adjust_sharpness); args[1]: 1 - factor (above)
  kInvert = 11,        // F.invert
  kGaussianBlur = 12,  // args[0], args[1]: kernel width, height; args[2]: sigma (F.gaussian_blur)
  // The policies' geometric ops, nearest neighbour, one fill level for every channel:
  // args[0]: angle in degrees, clockwise (F.affine turns the other way from F.rotate);
  // args[1], args[2]: translation in pixels (x right, y down); args[3]: scale; args[4], args[5]:
  // shear in degrees (x, y); args[6]: fill. F.affine with center=None: rotation, scale and shear
  // about the image centre.
  kAffine = 13,
  // kAffine's numbers, about the top-left corner (F.affine with center=[0, 0]), as the
  // AutoAugment, RandAugment and TrivialAugment policies shear (ShearX, ShearY).
  kAffineAtOrigin = 14,
  // args[0]: angle in degrees, counter-clockwise; args[1]: fill. F.rotate with expand=False,
  // about the image centre.
  kRotate = 15,
  // args[0]: the policies' ShearX / ShearY magnitude m (signed); args[1]: 0 for x, 1 for y;
  // args[2]: fill. F.affine with shear degrees(atan(m)) on that axis about the top-left corner,
  // the angle worked out in double as torchvision's _apply_image_or_video_transform does (a
  // float32 angle would move some pixels).
  kShear = 16,
  // random_erasing's rectangle, in output pixels: args[0], args[1]: top, left; args[2], args[3]:
  // height, width; args[4..6]: the value of channels 0..2 (kErase), or the noise's key as three
  // 16-bit numbers, lowest first (kEraseNoise: N(0, 1) per value; kEraseChannelNoise: per
  // channel), which stoke::kernels::erase_noise turns into the values.
  kErase = 17,
  kEraseNoise = 18,
  kEraseChannelNoise = 19,
  // kAffine's numbers and centre with bilinear sampling (F.affine with
  // interpolation=BILINEAR): random_affine's bilinear warp.
  kAffineBilinear = 20,
  // timm's ops (timm.data.auto_augment's functions of these names) as Pillow computes them on
  // uint8 RGB images. The warps (40 to 44) take args[1]: Pillow's filter (2 bilinear, 3 bicubic)
  // and args[2], args[3], args[4]: the fill colour (r, g, b).
  kPilAutocontrast = 30,   // ImageOps.autocontrast
  kPilEqualize = 31,       // ImageOps.equalize
  kPilInvert = 32,         // ImageOps.invert
  kPilPosterize = 33,      // args[0]: bits kept (8 or more: unchanged; 0 or fewer: black)
  kPilSolarize = 34,       // args[0]: threshold (values at or above it are inverted)
  kPilSolarizeAdd = 35,    // args[0]: added to values below args[1] (at most 255)
  kPilColor = 36,          // args[0]: factor (ImageEnhance.Color)
  kPilContrast = 37,       // args[0]: factor (ImageEnhance.Contrast)
  kPilBrightness = 38,     // args[0]: factor (ImageEnhance.Brightness)
  kPilSharpness = 39,      // args[0]: factor (ImageEnhance.Sharpness)
  kPilRotate = 40,         // args[0]: degrees, counter-clockwise (Image.rotate)
  kPilShearX = 41,         // args[0]: factor f: Image.transform AFFINE (1, f, 0, 0, 1, 0)
  kPilShearY = 42,         // args[0]: factor f: (1, 0, 0, f, 1, 0)
  kPilTranslateXRel = 43,  // args[0]: fraction p of the width: (1, 0, p * width, 0, 1, 0)
  kPilTranslateYRel = 44,  // args[0]: fraction p of the height: (1, 0, 0, 0, 1, p * height)
  // timm's AugMix (AugMixAugment). A chain: args[0]: its weight (float32); args[1]: how many of
  // the ops after it are its own; args[2]: its index (0: the mix starts, from the image as it is
  // then); args[3]: 1 in blended mode (b1). Each chain's ops run on a copy of the mix's input
  // image. Without blended mode, the chains add weight * image in float32 and kTimmAugMixBlend
  // ends the mix: the sum clipped to [0, 255] and truncated, then Image.blend(input, sum,
  // args[0] = m). In blended mode each chain's image is blended into the running image by its
  // weight and no kTimmAugMixBlend follows.
  kTimmAugMixChain = 45,
  kTimmAugMixBlend = 46,
  // AugMix (StepKind::kAugMix): one sample's record is a kAugMix, then for each chain a
  // kAugMixChain followed by that chain's ops (the numbers above; geometric ones sample with
  // the kAugMix's interpolation and take its fill, kNoFill being fill=None). Each chain's ops
  // apply in order to the image AugMix received; the result is, in float32 as torchvision
  // computes it, args[0] * image + the sum over chains of weight * chain, each product and each
  // sum rounded, then truncated to a byte.
  // kAugMix: args[0]: the image's own weight m[0] (m ~ Dirichlet([alpha, alpha])); args[1]: the
  // number of chains that follow; args[2]: their interpolation (0 nearest, 1 bilinear); args[3]:
  // their fill, or kNoFill (-1).
  kAugMix = 50,
  // kAugMixChain: args[0]: the chain's weight, Dirichlet([alpha] * width) times m[1] in float32;
  // args[1]: the number of ops that follow in the chain (its depth).
  kAugMixChain = 51,
};

// One op a sample got, with its numbers (see ImageOp; unused ones are 0).
struct AppliedOp {
  ImageOp op = ImageOp::kNone;
  float args[7] = {};
};

// "brightness", "contrast", "saturation", "hue", "grayscale", "solarize", "posterize",
// "equalize", "autocontrast", "sharpness", "invert", "gaussian_blur", "affine",
// "affine_at_origin", "rotate", "shear", "erase", "erase_noise", "erase_channel_noise",
// "affine_bilinear", "augmix", "augmix_chain"; timm's as "pil_" and its function's name
// ("pil_autocontrast", ..., "pil_solarize_add", "pil_color", "pil_rotate", "pil_shear_x",
// "pil_translate_x_rel", ...), "timm_augmix_chain", "timm_augmix_blend"; "" for kNone and
// unknown numbers.
std::string_view image_op_name(ImageOp op);

// How many of AppliedOp::args `op` uses (0 for kNone and unknown numbers).
int image_op_arg_count(ImageOp op);

// The interpolation of timm's warps: Pillow's filter numbers, or a choice of the two per op
// (timm's _RANDOM_INTERPOLATION).
enum class TimmInterpolation : std::int32_t { kRandom = 0, kBilinear = 2, kBicubic = 3 };

// A timm policy as its config string gives it ("rand-m9-mstd0.5-inc1", "augmix-m5-w3"), with
// the hparams timm's create_transform passes. Defaults are timm's.
struct TimmAugment {
  std::int32_t magnitude = 10;  // m: 10 for rand, 3 for augmix
  std::int32_t num_ops = 2;     // n: ops per image (rand)
  float probability = 0.5f;     // p: each op's chance (rand; AugMix's ops always apply)
  // mstd: the magnitude drawn per op from a normal of this deviation around m, or uniformly
  // from [0, m] when infinite (rand: above 100; AugMix's default); 0: m itself.
  float magnitude_std = 0.f;
  std::int32_t magnitude_max = 0;  // mmax: magnitudes clipped to [0, mmax]; 0: to [0, 10]
  bool increasing = false;         // inc: _RAND_INCREASING_TRANSFORMS (rand)
  std::int32_t width = 3;          // w: chains (augmix)
  std::int32_t depth = -1;         // d: ops per chain; 0 or less: 1 to 3, drawn per chain
  float alpha = 1.f;               // a: Dirichlet and Beta parameter (augmix)
  bool blended = false;            // b: blend each chain in turn (augmix)
  // hparams: the warps' filter, their fill (create_transform's round(255 * mean) of ImageNet's
  // mean), and the Rel translations' largest fraction of the side (0.45 for rand, 0.3 for
  // augmix, as create_transform sets them).
  TimmInterpolation interpolation = TimmInterpolation::kRandom;
  std::array<std::uint8_t, 3> fill = {124, 116, 104};
  float translate_pct = 0.45f;
};

// One step, as Pipeline::steps() describes it. It is also the record the loader copies into the
// shared arena for its workers, so it stays trivially copyable (fixed-width fields, no pointers).
struct Step {
  StepKind kind{};
  std::int32_t size = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  std::int32_t pad = 0;
  float probability = 0.f;
  float scale_min = 0.f;
  float scale_max = 0.f;
  float ratio_min = 0.f;
  float ratio_max = 0.f;
  float brightness = 0.f;
  float contrast = 0.f;
  std::int32_t size_max = 0;      // kScaleJitter: the largest side drawn
  bool longer_side = false;       // kScaleJitter: the drawn size is the longer side's
  float min_visible = 0.f;        // kBoxCrop
  float saturation = 0.f;         // kColorJitter: factor from [max(0, 1 - s), 1 + s]; 0: left alone
  float hue = 0.f;                // kColorJitter: factor from [-hue, hue]; 0: left alone
  float threshold = 0.f;          // kSolarize
  float factor = 0.f;             // kAdjustSharpness
  std::int32_t bits = 0;          // kPosterize
  std::int32_t kernel_width = 0;  // kGaussianBlur (odd)
  std::int32_t kernel_height = 0;   // kGaussianBlur (odd)
  float sigma_min = 0.f;            // kGaussianBlur
  float sigma_max = 0.f;            // kGaussianBlur
  float fill = 0.f;                 // policies: the level outside warped images (or kNoFill)
  std::int32_t num_ops = 0;         // kRandAugment
  std::int32_t magnitude = 0;       // kRandAugment: the bin every op takes
  std::int32_t magnitude_bins = 0;  // kTrivialAugmentWide, kRandAugment
  AutoAugmentPolicy policy = AutoAugmentPolicy::kImageNet;  // kAutoAugment
  EraseFill erase_fill = EraseFill::kConstant;              // kRandomErasing
  float erase_value[3] = {};  // kRandomErasing, kConstant: per channel, in output units
  TimmAugment timm{};                                       // kTimmRandAugment, kTimmAugMix
  // kRandomAffine (with scale_min, scale_max and fill): the angle's range in degrees, the
  // largest translations as fractions of the width and height, the shears' ranges in degrees.
  float degrees_min = 0.f;
  float degrees_max = 0.f;
  float translate_x = 0.f;
  float translate_y = 0.f;
  float shear_x_min = 0.f;
  float shear_x_max = 0.f;
  float shear_y_min = 0.f;
  float shear_y_max = 0.f;
  Interpolation interpolation = Interpolation::kNearest;  // kRandomAffine, kAugMix
  std::int32_t severity = 0;       // kAugMix: ops take bins 0..severity-1 of 10
  std::int32_t mixture_width = 0;  // kAugMix: chains
  std::int32_t chain_depth = 0;    // kAugMix: ops per chain; -1 draws 1..3 per chain
  float alpha = 0.f;               // kAugMix: the Dirichlet and Beta parameter
  bool all_ops = false;            // kAugMix: with brightness, color, contrast and sharpness
};

// torchvision's RandomAffine(degrees, translate, scale, shear, interpolation, fill) as numbers:
// the angle uniform in [degrees_min, degrees_max]; the translation int(round(u)) pixels with u
// uniform in [-translate_x * width, translate_x * width] (y likewise with the height); the
// scale uniform in [scale_min, scale_max]; the x shear uniform in [shear_x_min, shear_x_max] and
// the y shear in [shear_y_min, shear_y_max]. The defaults leave each out, as torchvision's None
// does; fill is a level in [0, 255] for every channel.
struct RandomAffineRanges {
  float degrees_min = 0.f, degrees_max = 0.f;
  float translate_x = 0.f, translate_y = 0.f;
  float scale_min = 1.f, scale_max = 1.f;
  float shear_x_min = 0.f, shear_x_max = 0.f;
  float shear_y_min = 0.f, shear_y_max = 0.f;
  Interpolation interpolation = Interpolation::kNearest;
  float fill = 0.f;
};

class Pipeline {
 public:
  // REQUIRES: channels is 1 (gray) or 3 (RGB).
  Pipeline(int output_height, int output_width, int channels);

  Pipeline& resize_shorter(int size);
  Pipeline& resize(int height, int width);
  Pipeline& center_crop(int height, int width);
  Pipeline& random_resized_crop(int height, int width, float scale_min = 0.08f,
                                float scale_max = 1.0f, float ratio_min = 3.f / 4.f,
                                float ratio_max = 4.f / 3.f);
  Pipeline& horizontal_flip(float probability = 0.5f);
  Pipeline& pad_random_crop(int pad, int height, int width);
  // torchvision's ColorJitter(brightness, contrast, saturation, hue): brightness, contrast and
  // saturation factors drawn from [max(0, 1 - v), 1 + v], hue from [-hue, hue] (hue <= 0.5),
  // applied in a random order; a 0 leaves that one alone, as torchvision's None does.
  Pipeline& color_jitter(float brightness, float contrast, float saturation = 0.f, float hue = 0.f);
  Pipeline& vertical_flip(float probability = 0.5f);
  // Scale jitter: resize, keeping the aspect ratio, so the shorter side (the longer one with
  // `longer_side`) is a whole number of pixels drawn uniformly from [min_side, max_side]. The
  // size varies, so a crop to the output size must follow.
  Pipeline& scale_jitter(int min_side, int max_side, bool longer_side = false);
  // A crop that keeps a box (detection data): random_resized_crop's windows, drawn the same
  // way, but a window is taken only when at least `min_visible` of some box's area lies inside
  // it; after 10 windows without one, the whole image. A sample without boxes takes the first
  // window that fits, as random_resized_crop does.
  Pipeline& box_crop(int height, int width, float min_visible = 0.5f, float scale_min = 0.1f,
                     float scale_max = 1.0f, float ratio_min = 0.5f, float ratio_max = 2.0f);

  // Photometric steps (torchvision.transforms.v2's, exactly, on uint8 pixels). `probability`:
  // how often the step applies (torchvision's RandomGrayscale / RandomSolarize / ... p).
  Pipeline& grayscale(float probability = 1.f);
  // torchvision's GaussianBlur(kernel_size, sigma): one sigma drawn uniformly from
  // [sigma_min, sigma_max] for both directions; kernel sides odd; reflected at the edges.
  Pipeline& gaussian_blur(int kernel_width, int kernel_height, float sigma_min = 0.1f,
                          float sigma_max = 2.0f);
  Pipeline& solarize(float threshold, float probability = 1.f);
  Pipeline& posterize(int bits, float probability = 1.f);
  Pipeline& equalize(float probability = 1.f);
  Pipeline& autocontrast(float probability = 1.f);
  Pipeline& adjust_sharpness(float factor, float probability = 1.f);
  Pipeline& invert(float probability = 1.f);

  // Augmentation policies, as torchvision.transforms.v2's (interpolation nearest, `fill` a
  // level in [0, 255]). They must come after every crop, resize and flip.
  Pipeline& trivial_augment_wide(int magnitude_bins = 31, float fill = 0.f);
  Pipeline& rand_augment(int num_ops = 2, int magnitude = 9, int magnitude_bins = 31,
                         float fill = 0.f);
  Pipeline& auto_augment(AutoAugmentPolicy policy = AutoAugmentPolicy::kImageNet, float fill = 0.f);
  // timm's RandAugment or AugMix from its config string, as timm's create_transform builds it
  // ("rand-m9-mstd0.5-inc1": DeiT's; "augmix-m5-w3"): sections separated by '-', the first
  // "rand" or "augmix", each other a key and its number: m, n, p, mstd, mmax, inc for rand; m,
  // w, d, a, b, mstd for augmix. `interpolation`, `fill` and `translate_pct` are the hparams
  // (translate_pct < 0: timm's for the kind). Throws ConfigError naming a section timm would
  // not take, one past stoke's bounds, or one it takes that stoke does not (t: other transform
  // sets); docs/USAGE.md lists them.
  Pipeline& timm_augment(std::string_view config,
                         TimmInterpolation interpolation = TimmInterpolation::kRandom,
                         std::array<std::uint8_t, 3> fill = {124, 116, 104},
                         float translate_pct = -1.f);

  // torchvision's RandomErasing(p, scale, ratio, value): with probability p, a rectangle of
  // area fraction in [scale_min, scale_max] and aspect ratio in [ratio_min, ratio_max] (drawn
  // log-uniformly; up to 10 tries, else nothing) gets `fill`. It acts on the delivered image:
  // for float outputs, after normalization, so constant values are in normalized units (0 is
  // the mean colour) and noise is N(0, 1) there, as torchvision's and timm's recipes erase the
  // normalized tensor; for uint8 outputs, on the pixels, constants being levels in [0, 255]
  // (noise needs a float output). It must be the last step.
  Pipeline& random_erasing(float probability = 0.5f, float scale_min = 0.02f,
                           float scale_max = 0.33f, float ratio_min = 0.3f, float ratio_max = 3.3f,
                           EraseFill fill = EraseFill::kConstant, float value_r = 0.f,
                           float value_g = 0.f, float value_b = 0.f);

  // torchvision's RandomAffine (see RandomAffineRanges): F.affine about the image centre, the
  // size kept, `fill` where the warp uncovers the image. Boxes become the axis-aligned box
  // around their four moved corners, masks move by nearest neighbour with mask_ignore outside.
  // It acts on the image as it is at its place in the pipeline (torchvision's recipes put it
  // after the crop and resize).
  Pipeline& random_affine(const RandomAffineRanges& ranges);
  // RandomAffine(degrees): the angle from [-degrees, degrees], nothing else.
  Pipeline& random_affine(float degrees);
  // torchvision's AugMix (its defaults; `fill` a level in [0, 255] or kNoFill, torchvision's
  // None). severity in 1..10, mixture_width in 1..16, chain_depth -1 or 1..16, alpha in
  // (0, 100].
  Pipeline& augmix(int severity = 3, int mixture_width = 3, int chain_depth = -1, float alpha = 1.f,
                   bool all_ops = true, Interpolation interpolation = Interpolation::kBilinear,
                   float fill = kNoFill);

  // The training pipeline to height x width: random-resized-crop + flip for photographs, or,
  // with `small_images` (28x28 digits and the like), pad-(side/7) random crop + flip.
  static Pipeline training(int height, int width, int channels, bool small_images);
  // The evaluation pipeline: resize the shorter side (to size/0.875 for photographs, to the
  // output size for small images), then centre crop.
  static Pipeline evaluation(int height, int width, int channels, bool small_images);

  int output_height() const { return height_; }
  int output_width() const { return width_; }
  int output_channels() const { return channels_; }
  const std::vector<Step>& steps() const { return steps_; }

  // Throws ConfigError when a parameter is out of range or the steps cannot end in a fixed
  // output size. (source_height, source_width) is the source size when every sample has the
  // same size (IDX data), or (0, 0) for decoded files of varying size.
  void validate(int source_height, int source_width) const;

  // The most ops one sample can get from these steps (color_jitter 4, rand_augment num_ops,
  // auto_augment 2, augmix 1 + mixture_width * (1 + depth), depth 3 when drawn, timm's rand n,
  // timm's augmix a chain mark per chain and its ops (up to 3 each when drawn) plus the final
  // blend, the other photometric steps, policies, random_affine and random_erasing 1 each): the
  // width of Batch::applied_ops().
  int max_applied_ops() const;

  // One line per step, e.g. "random_resized_crop 224x224 scale [0.08, 1] ratio [0.75, 1.33]".
  std::string describe() const;

 private:
  Pipeline& add(const Step& step);

  int height_;
  int width_;
  int channels_;
  std::vector<Step> steps_;
};

// A step by name and its numbers, as Python's pipeline= and the tools' --pipeline give it:
// {"box_crop", {512, 512, 0.5}}. The names are the builder methods' above; trailing numbers
// that a builder defaults may be left out. `words` are the arguments that are not numbers,
// which timm_augment and augmix take: timm_augment's config string, then key=value settings
// ("interpolation=bicubic", "fill=124,116,104", "translate_pct=0.45"); augmix's key=value
// settings ("severity=2", "interpolation=nearest").
struct StepSpec {
  std::string name;
  std::vector<double> args;
  std::vector<std::string> words;
};

// The pipeline of `steps` at height x width x channels. Throws ConfigError naming the step when
// a name is unknown, a count of numbers is wrong, or a side is not a whole number.
Pipeline make_pipeline(int height, int width, int channels, const std::vector<StepSpec>& steps);

// The text vocabulary that make_pipeline reads: each step's name ("random_solarize") and the
// numbers or words it takes ("(threshold[, probability])"), family by family: geometric,
// photometric, policies, timm, erasing, affine. Python's stoke.pipeline_steps() and
// stoke-bench --help show the same.
struct StepFormInfo {
  std::string name;
  std::string usage;
};
std::vector<StepFormInfo> step_forms();

// Steps from text: "scale_jitter 480 800 | box_crop 512 512 0.5 | horizontal_flip", steps
// separated by '|', each a name and its numbers ("timm_augment rand-m9-mstd0.5-inc1
// interpolation=bicubic": its words). Throws ConfigError when the steps are empty;
// make_pipeline refuses a word where a number belongs.
std::vector<StepSpec> parse_steps(std::string_view text);

}  // namespace stoke
