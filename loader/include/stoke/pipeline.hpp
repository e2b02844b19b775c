#pragma once
// A declarative, serializable description of how one sample becomes an output image.
//
// Thread-safety: a Pipeline is a value type; concurrent const access is safe.
//
// A pipeline is a list of steps applied in order after decoding, ending in an image of exactly
// output_height() x output_width() x output_channels() uint8 pixels. Random steps draw from a
// generator seeded only by (seed, epoch, global sample position), so the same sample at the same
// position always produces the same bytes, whatever process or thread runs it.

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
  kColorJitter = 7,        // brightness and contrast factors drawn from [1-b, 1+b], [1-c, 1+c]
  kVerticalFlip = 8,       // mirror top-bottom with probability `probability`
  kScaleJitter = 9,        // scale so the shorter (longer) side is a size in [size, size_max]
  kBoxCrop = 10,           // random_resized_crop whose window keeps min_visible of some box
};

// One step, as Pipeline::steps() describes it.
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
  std::int32_t size_max = 0;   // kScaleJitter: the largest side drawn
  bool longer_side = false;    // kScaleJitter: the drawn size is the longer side's
  float min_visible = 0.f;     // kBoxCrop
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
  Pipeline& color_jitter(float brightness, float contrast);
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
// that a builder defaults may be left out.
struct StepSpec {
  std::string name;
  std::vector<double> args;
};

// The pipeline of `steps` at height x width x channels. Throws ConfigError naming the step when
// a name is unknown, a count of numbers is wrong, or a side is not a whole number.
Pipeline make_pipeline(int height, int width, int channels, const std::vector<StepSpec>& steps);

// Steps from text: "scale_jitter 480 800 | box_crop 512 512 0.5 | horizontal_flip", steps
// separated by '|', each a name and its numbers. Throws ConfigError on a word that is not a
// number.
std::vector<StepSpec> parse_steps(std::string_view text);

}  // namespace stoke
