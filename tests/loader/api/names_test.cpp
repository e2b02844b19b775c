// The option vocabulary (stoke/names.hpp): every canonical word round-trips, the old spellings
// still parse, and anything else is a ConfigError listing what is accepted.
#include "stoke/names.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/number_text.hpp"
#include "stoke/error.hpp"
#include "stoke/kernels/normalize.hpp"

namespace stoke {
namespace {

template <class F>
std::string config_error(F parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Names, CanonicalWordsRoundTrip) {
  for (Augment v : {Augment::kTraining, Augment::kEvaluation})
    EXPECT_EQ(parse_augment(augment_name(v)), v);
  for (DType v : {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    EXPECT_EQ(parse_dtype(dtype_name(v)), v);
    EXPECT_STREQ(dtype_name(v), kernels::dtype_name(v));  // one spelling, kernels included
  }
  for (Layout v : {Layout::kNCHW, Layout::kNHWC}) EXPECT_EQ(parse_layout(layout_name(v)), v);
  for (LastBatch v : {LastBatch::kPad, LastBatch::kDrop})
    EXPECT_EQ(parse_last_batch(last_batch_name(v)), v);
  for (OnError v : {OnError::kSkip, OnError::kError})
    EXPECT_EQ(parse_on_error(on_error_name(v)), v);
  for (Split v : {Split::kTrain, Split::kTest}) EXPECT_EQ(parse_split(split_name(v)), v);
  EXPECT_EQ(devices_name(parse_devices("cuda:1,0")), "cuda:1,0");
  EXPECT_EQ(size_name(parse_size("224x160")), "224x160");
}

TEST(Names, CanonicalWordsAreTheDocumentedOnes) {
  EXPECT_STREQ(augment_name(Augment::kTraining), "train");
  EXPECT_STREQ(augment_name(Augment::kEvaluation), "eval");
  EXPECT_STREQ(layout_name(Layout::kNHWC), "nhwc");
  EXPECT_STREQ(last_batch_name(LastBatch::kDrop), "drop");
  EXPECT_STREQ(on_error_name(OnError::kError), "error");
  EXPECT_STREQ(split_name(Split::kTest), "test");
}

TEST(Names, CanonicalWordsListEachValueOnceWithoutAliases) {
  EXPECT_EQ(canonical_words<Augment>(), (std::vector<std::string>{"train", "eval"}));
  EXPECT_EQ(canonical_words<LastBatch>(), (std::vector<std::string>{"pad", "drop"}));
  EXPECT_EQ(canonical_words<DType>(),
            (std::vector<std::string>{"uint8", "float32", "float16", "bfloat16"}));
  for (const std::string& w : canonical_words<Verify>()) EXPECT_EQ(verify_name(parse_verify(w)), w);
  for (const std::string& w : canonical_words<MixRule>())
    EXPECT_EQ(mix_rule_name(parse_mix_rule(w)), w);
}

TEST(Names, OldSpellingsStayAcceptedAsAliases) {
  EXPECT_EQ(parse_augment("default"), Augment::kTraining);  // stoke-bench's
  EXPECT_EQ(parse_augment("none"), Augment::kEvaluation);   // stoke-bench's and Python's
}

TEST(Names, SizeTakesHxWOrOneSide) {
  EXPECT_EQ(parse_size("224x160"), (ImageSize{224, 160}));
  EXPECT_EQ(parse_size("32"), (ImageSize{32, 32}));
  for (const char* bad : {"", "x", "0", "32x", "x32", "32x0", "-4", "3x3x3", "65536", "2e3", " 32"})
    EXPECT_EQ(config_error([&] { parse_size(bad); }),
              "size must be HxW or N (N x N), each side 1..65535, e.g. 224x224 or 224; got '" +
                  std::string(bad) + "'")
        << bad;
}

TEST(Names, AnUnknownWordIsAConfigErrorListingTheAcceptedOnes) {
  EXPECT_EQ(config_error([] { parse_augment("x"); }),
            "augment must be train or eval (aliases: default, none), got 'x'");
  EXPECT_EQ(config_error([] { parse_dtype("float64"); }),
            "dtype must be uint8, float32, float16 or bfloat16, got 'float64'");
  EXPECT_EQ(config_error([] { parse_layout("NCHW"); }), "layout must be nchw or nhwc, got 'NCHW'");
  EXPECT_EQ(config_error([] { parse_last_batch("keep"); }),
            "last_batch must be pad or drop, got 'keep'");
  EXPECT_EQ(config_error([] { parse_on_error("ignore"); }),
            "on_error must be skip or error, got 'ignore'");
  EXPECT_EQ(config_error([] { parse_split("val"); }), "split must be train or test, got 'val'");
  EXPECT_NE(config_error([] { parse_devices("gpu:1"); }).find("devices 'gpu:1' not understood"),
            std::string::npos);
}

TEST(Names, StatsReportTypedValuesWithTheirOwnWords) {
  EXPECT_STREQ(tune_target_name(TuneTarget::kWorkers), "workers");
  EXPECT_STREQ(tune_target_name(TuneTarget::kPrefetch), "prefetch");
  EXPECT_STREQ(staging_mode_name(StagingMode::kNone), "none");
  EXPECT_STREQ(staging_mode_name(StagingMode::kHost), "host");
  EXPECT_STREQ(staging_mode_name(StagingMode::kRegistered), "registered");
  EXPECT_STREQ(staging_mode_name(StagingMode::kPinnedFallback), "pinned-fallback");
}

TEST(NumberText, WithCommasGroupsThousandsTheSameOnEveryMachine) {
  EXPECT_EQ(detail::with_commas(0), "0");
  EXPECT_EQ(detail::with_commas(999.4), "999");
  EXPECT_EQ(detail::with_commas(1234567.4), "1,234,567");
  EXPECT_EQ(detail::with_commas(-1500), "-1,500");
  EXPECT_EQ(detail::with_commas(1e12), "1,000,000,000,000");
}

}  // namespace
}  // namespace stoke
