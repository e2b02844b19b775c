// MixUp/CutMix and soft labels: the draws of both rules (partners, lambdas, boxes, switch and
// mix probabilities, padding), the soft labels' rounding, and the loader's delivered chunks
// against the same pipeline unmixed, on host devices and fake GPUs, for any worker count; the
// options' errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "consumer/batch_mixer.hpp"
#include "fake_gpu.hpp"
#include "golden_file.hpp"
#include "stoke/kernels/mix.hpp"
#include "stoke/loader.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using detail::MixConfig;
using kernels::MixOp;
using kernels::MixSample;

MixConfig config(MixRule rule, MixMode mode, double mixup, double cutmix) {
  MixConfig c;
  c.rule = rule;
  c.mode = mode;
  c.mixup_alpha = mixup;
  c.cutmix_alpha = cutmix;
  c.num_classes = 10;
  c.seed = 5;
  c.height = 40;
  c.width = 56;
  return c;
}

std::vector<MixSample> draw(const MixConfig& c, std::int64_t key, int n,
                            std::vector<std::uint8_t> valid = {}) {
  if (valid.empty()) valid.assign(static_cast<std::size_t>(n), 1);
  std::vector<MixSample> out(static_cast<std::size_t>(n));
  detail::draw_chunk_mixing(c, 3, key, valid, out);
  return out;
}

// What torch multiplies by for lambda `lam`.
void expect_weights(const MixSample& m, double lam) {
  EXPECT_EQ(m.label_self, static_cast<float>(lam));
  EXPECT_EQ(m.label_partner, static_cast<float>(1.0 - lam));
  EXPECT_EQ(m.lambda, lam);
}

TEST(MixDraws, TorchvisionRollsTheChunkByOneWithOneFloat32LambdaPerChunk) {
  const MixConfig c = config(MixRule::kTorchvision, MixMode::kBatch, 0.2, 0);
  double sum = 0;
  const int draws = 4000;
  for (int key = 0; key < draws; ++key) {
    const auto m = draw(c, key * 8, 8);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(m[i].partner, (i + 7) % 8);
      EXPECT_EQ(m[i].op, MixOp::kMixUp);
      EXPECT_EQ(m[i].lambda, m[0].lambda);
    }
    EXPECT_EQ(static_cast<double>(static_cast<float>(m[0].lambda)), m[0].lambda);  // float32
    expect_weights(m[0], m[0].lambda);
    EXPECT_EQ(m[0].self_weight, m[0].label_self);
    EXPECT_EQ(m[0].partner_weight, m[0].label_partner);
    sum += m[0].lambda;
  }
  // Beta(0.2, 0.2) is symmetric: mean 0.5, standard deviation 0.42 (standard error 0.007 here).
  EXPECT_NEAR(sum / draws, 0.5, 0.03);
}

TEST(MixDraws, TorchvisionCutMixBoxesAreCentredAnywhereWithTheirAreaAsLambda) {
  const MixConfig c = config(MixRule::kTorchvision, MixMode::kBatch, 0, 1.0);
  int clipped = 0;
  for (int key = 0; key < 2000; ++key) {
    const MixSample m = draw(c, key, 4)[1];
    ASSERT_EQ(m.op, MixOp::kCutMix);
    EXPECT_TRUE(m.top >= 0 && m.left >= 0 && m.top <= m.bottom && m.left <= m.right &&
                m.bottom <= c.height && m.right <= c.width);
    const double area = double(m.bottom - m.top) * double(m.right - m.left);
    expect_weights(m, 1.0 - area / (double(c.height) * double(c.width)));
    // Unclipped, a box is 2 * int(r * side) on each side with the same r for both sides.
    if (m.top == 0 || m.left == 0 || m.bottom == c.height || m.right == c.width) {
      ++clipped;
    } else {
      EXPECT_EQ((m.bottom - m.top) % 2, 0);
      EXPECT_EQ((m.right - m.left) % 2, 0);
    }
  }
  EXPECT_GT(clipped, 200);  // centres near an edge are drawn too
}

TEST(MixDraws, SwitchAndMixProbabilitiesChooseAsOften) {
  MixConfig c = config(MixRule::kTorchvision, MixMode::kBatch, 0.2, 1.0);
  c.switch_prob = 0.3;
  c.prob = 0.6;
  int cut = 0, none = 0;
  const int draws = 4000;
  for (int key = 0; key < draws; ++key) {
    const MixSample m = draw(c, key, 2)[0];
    cut += m.op == MixOp::kCutMix;
    none += m.op == MixOp::kNone;
  }
  EXPECT_NEAR(double(none) / draws, 0.4, 0.03);
  EXPECT_NEAR(double(cut) / (draws - none), 0.3, 0.03);
}

TEST(MixDraws, TimmBatchModeFlipsTheChunk) {
  const MixConfig c = config(MixRule::kTimm, MixMode::kBatch, 0.8, 1.0);
  for (int key = 0; key < 200; ++key) {
    const auto m = draw(c, key, 6);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(m[i].partner, m[i].op == MixOp::kNone ? i : 5 - i);
      EXPECT_EQ(m[i].op, m[0].op);
      EXPECT_EQ(m[i].lambda, m[0].lambda);
      EXPECT_EQ(m[i].top, m[0].top);
    }
    if (m[0].op == MixOp::kCutMix) {
      const double area = double(m[0].bottom - m[0].top) * double(m[0].right - m[0].left);
      expect_weights(m[0], 1.0 - area / (double(c.height) * double(c.width)));
    }
  }
}

TEST(MixDraws, TimmPairModeMixesEachPairBothWaysWithOneFloat32Draw) {
  const MixConfig c = config(MixRule::kTimm, MixMode::kPair, 0.8, 1.0);
  std::set<double> lambdas;
  for (int key = 0; key < 100; ++key) {
    const auto m = draw(c, key, 8);
    for (int i = 0; i < 4; ++i) {
      const MixSample &a = m[i], &b = m[7 - i];
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(a.lambda, b.lambda);
      EXPECT_EQ(static_cast<double>(static_cast<float>(a.lambda)), a.lambda);
      if (a.op == MixOp::kNone) continue;
      EXPECT_EQ(a.partner, 7 - i);
      EXPECT_EQ(b.partner, i);
      EXPECT_EQ(a.top, b.top);
      EXPECT_EQ(a.right, b.right);
      // Float32 arithmetic, as timm's float32 lambdas have it: 1 - lam rounded once.
      EXPECT_EQ(a.label_partner, 1.0f - static_cast<float>(a.lambda));
      lambdas.insert(a.lambda);
    }
  }
  EXPECT_GT(lambdas.size(), 300u);  // a draw per pair
}

TEST(MixDraws, TimmElemModeDrawsPerSample) {
  const MixConfig c = config(MixRule::kTimm, MixMode::kElem, 0.8, 0);
  const auto m = draw(c, 11, 16);
  std::set<double> lambdas;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(m[i].op, MixOp::kMixUp);
    EXPECT_EQ(m[i].partner, 15 - i);
    lambdas.insert(m[i].lambda);
  }
  EXPECT_EQ(lambdas.size(), 16u);
}

TEST(MixDraws, PaddingNeverMixesWithRealSamples) {
  const MixConfig c = config(MixRule::kTorchvision, MixMode::kBatch, 0.2, 0);
  const auto m = draw(c, 1, 6, {1, 1, 1, 1, 0, 0});
  for (int i = 0; i < 6; ++i) {
    const bool touches_padding = i >= 4 || (i + 5) % 6 >= 4;  // itself or its partner
    EXPECT_EQ(m[i].op, touches_padding ? MixOp::kNone : MixOp::kMixUp) << i;
    if (touches_padding) {
      EXPECT_EQ(m[i].partner, i);
      EXPECT_EQ(m[i].label_self, 1.0f);
      EXPECT_EQ(m[i].label_partner, 0.0f);
    }
  }
}

TEST(MixDraws, AreAFunctionOfSeedEpochAndKeyAlone) {
  const MixConfig c = config(MixRule::kTimm, MixMode::kElem, 0.8, 1.0);
  const auto a = draw(c, 40, 8), b = draw(c, 40, 8), other = draw(c, 48, 8);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(MixSample) * 8), 0);
  EXPECT_NE(std::memcmp(a.data(), other.data(), sizeof(MixSample) * 8), 0);
}

TEST(SoftLabels, AreTimmsSmoothedTargetsMixedAndRoundedAsTorchRounds) {
  MixConfig c = config(MixRule::kTimm, MixMode::kBatch, 0.8, 0);
  c.num_classes = 5;
  c.label_smoothing = 0.1;
  MixSample a;
  a.partner = 1;
  a.op = MixOp::kMixUp;
  a.label_self = 0.3f;
  a.label_partner = static_cast<float>(1.0 - double(0.3f));
  MixSample b;  // unmixed
  b.partner = 1;
  const std::vector<std::int32_t> labels = {1, 3};
  const std::vector<MixSample> mix = {a, b};
  std::vector<float> out(10);
  detail::write_soft_labels(c, labels, mix, out);
  const float off = static_cast<float>(0.1 / 5);
  const float on = static_cast<float>(1 - 0.1 + 0.1 / 5);
  const auto term = [](float v, float w) {
    volatile float p = v * w;  // rounded on its own, as torch's mul is
    return static_cast<float>(p);
  };
  for (int k = 0; k < 5; ++k) {
    const float want =
        term(k == 1 ? on : off, a.label_self) + term(k == 3 ? on : off, a.label_partner);
    EXPECT_EQ(out[k], want) << k;
    EXPECT_EQ(out[5 + k], k == 3 ? on : off) << k;
  }
  // Without smoothing: exactly one-hot, and the two weights where the labels are.
  c.label_smoothing = 0;
  detail::write_soft_labels(c, labels, mix, out);
  EXPECT_EQ(out[1], a.label_self);
  EXPECT_EQ(out[3], a.label_partner);
  EXPECT_EQ(out[0] + out[2] + out[4], 0.0f);
  EXPECT_EQ(out[8], 1.0f);
}

// ---- parity with torchvision and timm (tests/data/mix_golden.bin, make_mix_golden.py) ---------

TEST(MixParity, PixelsAndSoftLabelsAreTorchvisionsAndTimmsByteForByte) {
  std::string error;
  const std::vector<std::uint8_t> file =
      test::read_golden_file(test::golden_path("mix_golden.bin"), error);
  ASSERT_TRUE(error.empty()) << error;
  test::FieldReader in(file);
  ASSERT_EQ(in.u32(), 0x4758494du);  // "MIXG"
  ASSERT_EQ(in.u32(), 1u);
  const int n = static_cast<int>(in.u32()), c = static_cast<int>(in.u32());
  const int h = static_cast<int>(in.u32()), w = static_cast<int>(in.u32());
  const int classes = static_cast<int>(in.u32());
  ASSERT_TRUE(n == 6 && c == 3 && h > 0 && h < 64 && w > 0 && w < 64 && classes == 10);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& l : labels) l = static_cast<std::int32_t>(in.u32());
  const std::size_t count = std::size_t(n) * c * h * w;
  std::vector<float> x(count);
  for (float& v : x) v = in.f32();
  const std::uint32_t cases = in.u32();
  ASSERT_FALSE(in.failed());
  ASSERT_EQ(cases, 36u);
  for (std::uint32_t k = 0; k < cases; ++k) {
    const std::string name = test::read_golden_label(in);
    const std::uint32_t dtype_code = in.u32();
    in.u32();  // the rule: the records say what it drew
    const double smoothing = in.f64();
    static constexpr DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
    const DType dtype = kTypes[dtype_code % 3];
    SCOPED_TRACE(name + " " + kernels::dtype_name(dtype));
    std::vector<MixSample> mix;
    for (int i = 0; i < n; ++i) {
      const int partner = static_cast<int>(in.u32());
      const auto op = static_cast<MixOp>(in.u32());
      const double lam = in.f64();
      std::array<int, 4> box{};
      for (int& b : box) b = static_cast<int>(in.u32());
      mix.push_back(detail::mix_entry(partner, op, lam, box));
    }
    const std::size_t size = kernels::dtype_size(dtype);
    const std::vector<std::uint8_t> want = in.bytes(count * size);
    std::vector<float> want_soft(std::size_t(n) * classes);
    for (float& v : want_soft) v = in.f32();
    ASSERT_FALSE(in.failed());
    // The chunk in the case's type, rounded as torch's .to() rounds.
    std::vector<std::uint8_t> src(count * size), got(count * size);
    for (std::size_t i = 0; i < count; ++i) {
      if (dtype == DType::kFloat32) {
        std::memcpy(src.data() + 4 * i, &x[i], 4);
      } else {
        const std::uint16_t v = dtype == DType::kFloat16 ? kernels::float_to_half_rn(x[i])
                                                         : kernels::float_to_bfloat16_rn(x[i]);
        std::memcpy(src.data() + 2 * i, &v, 2);
      }
    }
    kernels::MixParams p;
    p.samples = n;
    p.height = h;
    p.width = w;
    p.channels = c;
    p.dtype = dtype;
    p.mix = mix.data();
    kernels::mix_cpu(p, src.data(), got.data());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < count; ++i)
      differ += std::memcmp(got.data() + i * size, want.data() + i * size, size) != 0;
    EXPECT_EQ(differ, 0u) << "pixels differing from the reference's";
    MixConfig mc;
    mc.num_classes = classes;
    mc.label_smoothing = smoothing;
    std::vector<float> soft(want_soft.size());
    detail::write_soft_labels(mc, labels, mix, soft);
    EXPECT_EQ(std::memcmp(soft.data(), want_soft.data(), soft.size() * 4), 0)
        << "soft labels differ";
  }
  EXPECT_TRUE(in.at_end());
}

TEST(MixParity, CutMixBoxesAreTorchvisionsAndTimmsForEveryLambdaAndCentre) {
  std::string error;
  const std::vector<std::string> lines = test::read_golden_lines("mix_boxes.txt", error);
  ASSERT_TRUE(error.empty()) << error;
  int cases = 0, differ = 0;
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string rule;
    double lam = 0;
    int float32 = 0, h = 0, w = 0, cy = 0, cx = 0;
    std::array<int, 4> want{};
    fields >> rule >> lam >> float32 >> h >> w >> cy >> cx >> want[0] >> want[1] >> want[2] >>
        want[3];
    ASSERT_TRUE(fields && (rule == "torchvision" || rule == "timm")) << line;
    const std::array<int, 4> got = rule == "torchvision"
                                       ? detail::torchvision_cutmix_box(lam, cy, cx, h, w)
                                       : detail::timm_cutmix_box(lam, float32 != 0, cy, cx, h, w);
    if (got != want) {
      ++differ;
      ADD_FAILURE() << line << ": got " << got[0] << " " << got[1] << " " << got[2] << " "
                    << got[3];
    }
    ++cases;
  }
  EXPECT_EQ(cases, 1170);
  EXPECT_EQ(differ, 0);
}

// ---- through the loader --------------------------------------------------------------------

constexpr int kSide = 32;

Options mixing_options(int workers = 2) {
  Options o;
  o.data = test::testdata("jpeg");
  o.batch = 16;
  o.seed = 9;
  o.workers = workers;
  o.dtype = DType::kFloat32;
  o.devices = DeviceSet::parse("cpu:2");
  o.log = [](std::string_view) {};
  o.pipeline = make_pipeline(kSide, kSide, 3,
                             parse_steps("random_resized_crop 32 32 | horizontal_flip | "
                                         "random_erasing_pixel 0.5"));
  return o;
}

Options mixed(Options o) {
  o.mixup_alpha = 0.8;
  o.cutmix_alpha = 1.0;
  o.num_classes = 24;
  o.label_smoothing = 0.1;
  return o;
}

struct Delivered {
  std::vector<std::uint8_t> out;  // every chunk's data, in order
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> valid;
  std::vector<float> soft;
  std::vector<MixSample> mix;
  int batches = 0;
};

// Appends at most `batches` of the loader's epoch (all that is left, by default) to `e`.
void take(Loader& loader, Delivered& e, std::int64_t batches = -1) {
  for (; batches != 0; --batches) {
    auto b = loader.next();
    if (!b) return;
    for (int d = 0; d < b->device_count(); ++d) {
      b->wait(d);
      const DeviceChunk c = b->chunk(d);
      const auto* p = static_cast<const std::uint8_t*>(c.data);
      e.out.insert(e.out.end(), p, p + c.bytes);
      EXPECT_EQ(c.soft_labels.size(), static_cast<std::size_t>(c.samples * b->num_classes()));
    }
    e.labels.insert(e.labels.end(), b->labels().begin(), b->labels().end());
    e.valid.insert(e.valid.end(), b->valid().begin(), b->valid().end());
    e.soft.insert(e.soft.end(), b->soft_labels().begin(), b->soft_labels().end());
    e.mix.insert(e.mix.end(), b->mixing().begin(), b->mixing().end());
    e.batches += 1;
  }
}

Delivered take(Loader& loader) {
  Delivered e;
  take(loader, e);
  return e;
}

TEST(Mixing, DeliversTheUnmixedChunksMixedAsEachSampleSays) {
  Loader plain_loader(mixing_options());
  const Delivered plain = take(plain_loader);
  Loader mixed_loader(mixed(mixing_options()));
  const Delivered got = take(mixed_loader);
  ASSERT_EQ(got.out.size(), plain.out.size());
  ASSERT_EQ(got.mix.size(), got.labels.size());
  EXPECT_TRUE(got.labels == plain.labels);
  const int per = 8;  // batch 16 over two host devices
  const std::size_t chunk_floats = std::size_t{per} * 3 * kSide * kSide;
  int ops[3] = {0, 0, 0};
  for (std::size_t k = 0; k * per < got.mix.size(); ++k) {
    kernels::MixParams p;
    p.samples = per;
    p.height = p.width = kSide;
    p.channels = 3;
    p.mix = got.mix.data() + k * per;
    std::vector<float> want(chunk_floats);
    kernels::mix_cpu(p, plain.out.data() + k * chunk_floats * 4, want.data());
    ASSERT_EQ(std::memcmp(want.data(), got.out.data() + k * chunk_floats * 4, chunk_floats * 4), 0)
        << "chunk " << k;
    for (int i = 0; i < per; ++i) ops[static_cast<int>(got.mix[k * per + i].op)] += 1;
  }
  EXPECT_GT(ops[1], 0);  // some MixUp, some CutMix (each chunk draws one)
  EXPECT_GT(ops[2], 0);
  // The soft labels: the partner's label inside the chunk, weighted as the sample says.
  const float off = static_cast<float>(0.1 / 24);
  for (std::size_t n = 0; n < got.labels.size(); ++n) {
    const MixSample& m = got.mix[n];
    const std::size_t partner = n / per * per + static_cast<std::size_t>(m.partner);
    const float* row = got.soft.data() + n * 24;
    double sum = 0;
    for (int k = 0; k < 24; ++k) sum += row[k];
    EXPECT_NEAR(sum, 1.0, 1e-5);
    if (got.labels[n] != got.labels[partner]) {
      EXPECT_NEAR(row[got.labels[partner]], m.label_partner * (1 - 0.1) + off, 1e-6);
    }
  }
}

TEST(Mixing, FakeGpusDeliverTheHostDevicesBytes) {
  Options o = mixed(mixing_options());
  o.dtype = DType::kFloat16;
  o.layout = Layout::kNHWC;
  Loader host(o);
  const Delivered expected = take(host);
  test::FakeGpuScope gpu;
  o.devices = DeviceSet::parse("cuda:0,1");
  Loader on_gpus = gpu.loader(o);
  const Delivered got = take(on_gpus);
  EXPECT_TRUE(got.out == expected.out);
  EXPECT_TRUE(got.soft == expected.soft);
  std::lock_guard lock(gpu.log().mutex);
  // One per device and batch, and perhaps for the next epoch's first batches, staged ahead.
  EXPECT_GE(gpu.log().mixes, 2 * got.batches);
  EXPECT_EQ(gpu.log().kernels_given_host_memory, 0);
}

TEST(Mixing, IsIdenticalForAnyWorkerCount) {
  Options o = mixed(mixing_options(0));
  o.mix_rule = MixRule::kTimm;
  o.mix_mode = MixMode::kPair;
  Loader inline_loader(o);
  const Delivered a = take(inline_loader);
  o.workers = 3;
  Loader pooled(o);
  const Delivered b = take(pooled);
  EXPECT_TRUE(a.out == b.out);
  EXPECT_TRUE(a.soft == b.soft);
  ASSERT_EQ(a.mix.size(), b.mix.size());
  EXPECT_EQ(std::memcmp(a.mix.data(), b.mix.data(), a.mix.size() * sizeof(MixSample)), 0);
}

// The draws come from the chunks' positions: a loader resumed mid-epoch mixes as the
// uninterrupted one does.
TEST(Mixing, ResumesExactly) {
  const Options o = mixed(mixing_options());
  Loader whole(o);
  const Delivered want = take(whole);
  Loader first(o);
  Delivered got;
  take(first, got, 2);
  ASSERT_EQ(got.batches, 2);
  Options resumed = o;
  resumed.resume = first.state();
  Loader second(resumed);
  take(second, got);
  EXPECT_TRUE(got.out == want.out);
  EXPECT_TRUE(got.soft == want.soft);
  ASSERT_EQ(got.mix.size(), want.mix.size());
  EXPECT_EQ(std::memcmp(got.mix.data(), want.mix.data(), got.mix.size() * sizeof(MixSample)), 0);
}

TEST(Mixing, ClearErrors) {
  Options o = mixed(mixing_options());
  o.num_classes = 0;
  o.label_smoothing = 0;
  EXPECT_EQ(test::config_error(o),
            "mixing (mixup_alpha or cutmix_alpha) mixes the labels too: set num_classes to the "
            "dataset's number of classes, and read Batch::soft_labels");
  o = mixed(mixing_options());
  o.dtype = DType::kUInt8;
  o.pipeline = make_pipeline(kSide, kSide, 3, parse_steps("random_resized_crop 32 32"));
  EXPECT_EQ(test::config_error(o),
            "mixing works on the normalized output: it needs a float dtype (float32, float16 or "
            "bfloat16), not uint8");
  o = mixed(mixing_options());
  o.num_classes = 20;
  EXPECT_EQ(test::config_error(o),
            "num_classes is 20, but sample 92 has label 23; set num_classes to at least 24");
  o = mixed(mixing_options());
  o.mix_mode = MixMode::kPair;
  EXPECT_EQ(test::config_error(o),
            "mix_mode pair is timm's: torchvision's MixUp and CutMix draw once per batch; use "
            "mix_rule timm, or mix_mode batch");
  o.mix_rule = MixRule::kTimm;
  o.batch = 6;
  EXPECT_EQ(test::config_error(o),
            "mix_rule timm mixes sample i with sample n-1-i of each device's chunk, and timm's "
            "Mixup refuses an odd batch: the chunk (batch 6 / 2 devices = 3) must be even");
  o = mixed(mixing_options());
  o.mixup_alpha = -1;
  EXPECT_EQ(
      test::config_error(o),
      "mixup_alpha and cutmix_alpha must be in [0, 1e6] (0: off; 0.2 and 1.0 in torchvision's "
      "recipe), got -1 and 1");
  o = mixed(mixing_options());
  o.mix_prob = 1.5;
  EXPECT_EQ(test::config_error(o),
            "mix_prob and mix_switch_prob are probabilities in 0..1, got 1.5 and 0.5");
  o = mixed(mixing_options());
  o.label_smoothing = 1;
  EXPECT_EQ(test::config_error(o),
            "label_smoothing must be in [0, 1) (0.1 in the common recipes), got 1");
  o = mixing_options();
  o.label_smoothing = 0.1;
  EXPECT_EQ(test::config_error(o),
            "label_smoothing smooths the soft labels: set num_classes as well");
  o = mixed(mixing_options());
  o.data = test::testdata("detection") + "/instances.json";
  o.pipeline.reset();
  o.height = o.width = 32;
  const std::string boxes = test::config_error(o);
  EXPECT_TRUE(boxes.find("MixUp and CutMix would blend the pixels but not the boxes") == 0 ||
              boxes.find("num_classes is 24") == 0)
      << boxes;
}

}  // namespace
}  // namespace stoke
