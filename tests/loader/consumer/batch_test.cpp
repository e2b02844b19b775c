// A Batch that no longer holds its slot (released, or moved from) refuses every accessor with
// stoke::Error instead of reading memory that went back to the workers.
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace stoke {
namespace {

using test::fashion_options;

// Every accessor of Batch but empty(), release() and the special members.
const std::vector<std::pair<const char*, std::function<void(const Batch&)>>> kAccessors = {
    {"epoch", [](const Batch& b) { b.epoch(); }},
    {"index", [](const Batch& b) { b.index(); }},
    {"size", [](const Batch& b) { b.size(); }},
    {"padded", [](const Batch& b) { b.padded(); }},
    {"height", [](const Batch& b) { b.height(); }},
    {"width", [](const Batch& b) { b.width(); }},
    {"channels", [](const Batch& b) { b.channels(); }},
    {"pixels", [](const Batch& b) { b.pixels(); }},
    {"labels", [](const Batch& b) { b.labels(); }},
    {"valid", [](const Batch& b) { b.valid(); }},
    {"sample_ids", [](const Batch& b) { b.sample_ids(); }},
    {"device_count", [](const Batch& b) { b.device_count(); }},
    {"chunk", [](const Batch& b) { b.chunk(0); }},
    {"wait", [](const Batch& b) { b.wait(0); }},
    {"record_stream", [](const Batch& b) { b.record_stream(0, nullptr); }},
};

void expect_every_accessor_throws(const Batch& b) {
  ASSERT_TRUE(b.empty());
  for (const auto& [name, call] : kAccessors) {
    try {
      call(b);
      ADD_FAILURE() << name << "() did not throw";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "this batch was released (or moved from): its memory went back to the loader")
          << name;
    }
  }
}

TEST(Batch, EveryAccessorThrowsAfterRelease) {
  Loader loader(fashion_options(1));
  std::optional<Batch> b = loader.next();
  ASSERT_TRUE(b);
  for (const auto& [name, call] : kAccessors) EXPECT_NO_THROW(call(*b)) << name;
  b->release();
  expect_every_accessor_throws(*b);
  b->release();  // twice is harmless
}

TEST(Batch, EveryAccessorThrowsOnAMovedFromBatchWhileTheMovedToOneReads) {
  Loader loader(fashion_options(0));
  Batch from = *loader.next();
  const std::vector<std::int32_t> labels(from.labels().begin(), from.labels().end());
  Batch to = std::move(from);
  expect_every_accessor_throws(from);  // NOLINT(bugprone-use-after-move): the point
  EXPECT_EQ(std::vector<std::int32_t>(to.labels().begin(), to.labels().end()), labels);
}

TEST(Batch, ACopyKeepsReadingAfterTheOriginalIsReleased) {
  Loader loader(fashion_options(1));
  Batch original = *loader.next();
  const Batch copy = original;
  const std::vector<std::uint8_t> pixels(original.pixels().begin(), original.pixels().end());
  original.release();
  EXPECT_EQ(std::vector<std::uint8_t>(copy.pixels().begin(), copy.pixels().end()), pixels);
}

TEST(Batch, ADeviceOutOfRangeIsAnErrorNamingIt) {
  Options o = fashion_options(0);
  o.devices = DeviceSet::parse("cpu:2");
  Loader loader(o);
  const Batch b = *loader.next();
  for (int device : {-1, 2}) {
    try {
      b.chunk(device);
      ADD_FAILURE() << "chunk(" << device << ") did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "device " + std::to_string(device) + " out of range: this batch has 2 device(s)");
    }
    EXPECT_THROW(b.wait(device), Error);
  }
  EXPECT_EQ(b.chunk(1).first, 50);
}

}  // namespace
}  // namespace stoke
