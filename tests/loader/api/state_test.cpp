// The saved loader position as text: the current format, the one before positions were saved,
// and the messages for text that is not a state.
#include "stoke/state.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stoke/error.hpp"

namespace stoke {
namespace {

std::string parse_error(const std::string& text) {
  try {
    LoaderState::parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(LoaderState, SerializesEveryFieldAndParsesItBack) {
  const LoaderState s{18446744073709551615ull, 4, 1234, 19, 10000, 64};
  EXPECT_EQ(s.serialize(),
            "stoke-state/2 seed=18446744073709551615 epoch=4 position=1234 next_batch=19 "
            "dataset_size=10000 global_batch=64");
  EXPECT_EQ(LoaderState::parse(s.serialize()), s);
  // Any order and spacing of the fields.
  EXPECT_EQ(LoaderState::parse("stoke-state/2  global_batch=64 dataset_size=10000 next_batch=19 "
                               "position=1234 epoch=4 seed=18446744073709551615"),
            s);
}

// Repeated augmentation's k is written only when it is not 1, so the other states read as
// before.
TEST(LoaderState, CarriesRepeatsWhenThereAreAny) {
  const LoaderState s{7, 1, 640, 10, 1000, 64, 4};
  EXPECT_EQ(s.serialize(),
            "stoke-state/2 seed=7 epoch=1 position=640 next_batch=10 dataset_size=1000 "
            "global_batch=64 repeats=4");
  EXPECT_EQ(LoaderState::parse(s.serialize()), s);
  EXPECT_EQ(LoaderState::parse("stoke-state/2 seed=7 epoch=1 position=640 next_batch=10 "
                               "dataset_size=1000 global_batch=64")
                .repeats,
            1);
  EXPECT_EQ(parse_error("stoke-state/1 seed=7 epoch=1 next_batch=10 dataset_size=1000 "
                        "global_batch=64 repeats=4"),
            "loader state: unknown field 'repeats'");
}

// A mixture's per-source counts are written only for a mixture, and must add up to the
// position.
TEST(LoaderState, CarriesAMixturesCountsPerSource) {
  LoaderState s{7, 2, 640, 10, 1000, 64, 1};
  s.sources = {400, 0, 240};
  EXPECT_EQ(s.serialize(),
            "stoke-state/2 seed=7 epoch=2 position=640 next_batch=10 dataset_size=1000 "
            "global_batch=64 sources=400,0,240");
  EXPECT_EQ(LoaderState::parse(s.serialize()), s);
  const std::string head =
      "stoke-state/2 seed=7 epoch=2 position=640 next_batch=10 dataset_size=1000 "
      "global_batch=64 ";
  EXPECT_EQ(parse_error(head + "sources=400,0,241"),
            "loader state: its sources' counts add up to 641, not its position 640");
  EXPECT_EQ(parse_error(head + "sources=400,,240"),
            "loader state: field 'sources=400,,240' is not a list of sample counts (N,N,...)");
  EXPECT_EQ(parse_error(head + "sources=9223372036854775807,1"),
            "loader state: its sources' counts add up past 2^63");
  EXPECT_EQ(parse_error(head + "sources=-1,641"),
            "loader state: field 'sources=-1,641' is not a list of sample counts (N,N,...)");
}

TEST(LoaderState, ReadsAVersionOneStateAsThePlainPositionOfItsBatch) {
  const LoaderState s = LoaderState::parse(
      "stoke-state/1 seed=7 epoch=2 next_batch=37 dataset_size=10000 global_batch=100");
  EXPECT_EQ(s, (LoaderState{7, 2, 3700, 37, 10000, 100}));
  // The end of a padded epoch: 157 batches of 64 reach past 10,000; the position is 10,000.
  EXPECT_EQ(LoaderState::parse("stoke-state/1 seed=7 epoch=2 next_batch=157 dataset_size=10000 "
                               "global_batch=64")
                .position,
            10000);
  EXPECT_EQ(parse_error("stoke-state/1 seed=7 epoch=2 position=5 next_batch=37 "
                        "dataset_size=10000 global_batch=100"),
            "loader state: unknown field 'position'");
}

TEST(LoaderState, PlainPositionNeverOverflows) {
  LoaderState s{0, 0, 0, std::int64_t{1} << 62, 10000, 1 << 20};
  EXPECT_EQ(s.plain_position(), 10000);
  s.next_batch = -3;
  EXPECT_EQ(s.plain_position(), 0);
}

TEST(LoaderState, RefusesTextThatIsNotAStateNamingTheProblem) {
  EXPECT_EQ(parse_error("hello"),
            "not a saved loader state (expected it to start with 'stoke-state/2' or "
            "'stoke-state/1'): 'hello'");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 epoch=x"),
            "loader state: field 'epoch=x' is not a number");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 epoch"), "loader state: malformed field 'epoch'");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 step=3"), "loader state: unknown field 'step'");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 seed=2"), "loader state: field 'seed' appears twice");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 epoch=0 next_batch=3 dataset_size=10 "
                        "global_batch=2"),
            "loader state: field 'position' is missing");
  EXPECT_EQ(parse_error("stoke-state/2 seed=1 epoch=0 position=-1 next_batch=3 dataset_size=10 "
                        "global_batch=2 "),
            "(parsed)");  // ranges are checked against the loader it resumes (Config tests)
  EXPECT_EQ(parse_error("stoke-state/2 seed=-1 epoch=0 position=0 next_batch=0 dataset_size=1 "
                        "global_batch=1"),
            "loader state: field 'seed=-1' is not a number");
}

}  // namespace
}  // namespace stoke
