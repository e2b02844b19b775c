// Staging batches to devices: the registered (zero host copy) path and its pinned fallback on a
// fake GPU that checks every copy, slot lifetimes while copies are in flight, held batches, and
// host devices producing exactly the CPU reference's normalized bytes.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fake_gpu.hpp"
#include "stoke/kernels/normalize.hpp"
#include "test_support.hpp"

namespace stoke {
namespace {

using test::FakeGpuScope;

// The bytes a device received for one chunk, after waiting for them.
std::vector<std::uint8_t> device_bytes(const Batch& b, int dev) {
  b.wait(dev);
  const DeviceChunk c = b.chunk(dev);
  const auto* p = static_cast<const std::uint8_t*>(c.data);
  return {p, p + c.bytes};
}

// The chunk's labels, valid flags and sources on the device equal the host's (the sources all 0:
// one dataset). REQUIRES: waited for.
bool device_targets_match(const DeviceChunk& c) {
  if (c.device_labels == nullptr || c.device_valid == nullptr || c.device_sources == nullptr)
    return false;
  return c.device_labels != c.labels.data() &&  // a copy of its own, not the slot's bytes
         std::equal(c.labels.begin(), c.labels.end(), c.device_labels) &&
         std::equal(c.valid.begin(), c.valid.end(), c.device_valid) &&
         c.sources.size() == c.valid.size() &&
         std::equal(c.sources.begin(), c.sources.end(), c.device_sources) &&
         std::count(c.sources.begin(), c.sources.end(), 0) ==
             static_cast<std::ptrdiff_t>(c.sources.size());
}

// What two host devices receive in `epoch` (its first `batches`, or all when -1): the bytes
// the fake GPUs must end up with.
test::Delivered host_reference(std::int64_t epoch, std::int64_t batches) {
  Options host = test::fashion_options(2, 64);
  host.devices = DeviceSet::parse("cpu:2");
  Loader loader(host);
  loader.set_epoch(epoch);
  return test::collect(loader, batches);
}

Options fake_gpu_options(int workers, int batch = 64) {
  Options o = test::fashion_options(workers, batch);
  o.devices = DeviceSet::parse("cuda:0,1");
  return o;
}

// What the CPU reference makes of a chunk's uint8 pixels.
std::vector<std::uint8_t> reference(const DeviceChunk& c, const Options& o, int h, int w, int ch) {
  kernels::NormalizeParams p;
  p.samples = c.samples;
  p.height = h;
  p.width = w;
  p.channels = ch;
  p.dtype = o.dtype;
  p.layout = o.layout;
  for (int i = 0; i < ch; ++i) {
    p.mean[i] = 0.5f * 255.0f;
    p.stddev[i] = 0.5f * 255.0f;
  }
  std::vector<std::uint8_t> out(kernels::normalized_bytes(p));
  kernels::normalize_cpu(p, c.pixels.data(), out.data());
  return out;
}

TEST(Staging, GpuChunksAreCopiedStraightFromTheRegisteredArena) {
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(1);
  Options o = fake_gpu_options(2);
  Loader loader = gpu.loader(o);
  std::int64_t batches = 0;
  while (auto b = loader.next()) {
    ASSERT_EQ(b->device_count(), 2);
    for (int d = 0; d < 2; ++d) {
      const DeviceChunk c = b->chunk(d);
      EXPECT_EQ(c.cuda_device, d);
      EXPECT_NE(c.ready, nullptr);
      EXPECT_EQ(c.dtype, DType::kUInt8);
      EXPECT_EQ(c.shape, (std::array<std::int64_t, 4>{32, 28, 28, 1}));
      const std::vector<std::uint8_t> got = device_bytes(*b, d);
      ASSERT_EQ(got.size(), c.pixels.size());
      ASSERT_TRUE(std::equal(got.begin(), got.end(), c.pixels.begin())) << "batch " << batches;
      ASSERT_TRUE(device_targets_match(c)) << "batch " << batches;
    }
    ++batches;
  }
  const Stats s = loader.stats();
  EXPECT_EQ(batches, 157);  // 10,000 / 64, padded
  EXPECT_EQ(s.staging, StagingMode::kRegistered);
  EXPECT_EQ(s.host_copy_bytes, 0);
  EXPECT_GE(s.staged_batches, batches);
  EXPECT_EQ(s.dma_copies, 4 * s.staged_batches);  // per device: the pixels, then the targets
  // The targets: labels (64 x 4 bytes), ids, planned ids (64 x 8 each), sources (64 x 4), valid
  // (64), each on a 64-byte boundary: 1600 bytes per device.
  EXPECT_EQ(s.dma_bytes, s.staged_batches * (64 * 28 * 28 + 2 * 1600));
  EXPECT_EQ(s.pinned_bytes % 4096, 0);
  EXPECT_GT(s.pinned_bytes, 0);
  std::lock_guard lock(gpu.log().mutex);
  // The stager may be staging the next epoch's first batches meanwhile: at least as many.
  EXPECT_GE(gpu.log().copies, s.dma_copies);
  EXPECT_EQ(gpu.log().copies_from_pinned_arena, gpu.log().copies);  // every one, no exception
  EXPECT_EQ(gpu.log().sources_changed_before_dma, 0);
}

TEST(Staging, GpuBatchesCarryTheSameBytesAsHostDevices) {
  const test::Delivered expected = host_reference(0, -1);

  FakeGpuScope gpu;
  Loader loader = gpu.loader(fake_gpu_options(2));
  test::Delivered got;
  std::vector<std::uint8_t> on_devices;
  while (auto b = loader.next()) {
    test::append(got, *b);
    for (int d = 0; d < 2; ++d) {
      const auto bytes = device_bytes(*b, d);
      on_devices.insert(on_devices.end(), bytes.begin(), bytes.end());
    }
  }
  EXPECT_TRUE(got == expected);
  EXPECT_TRUE(on_devices == expected.pixels);
}

TEST(Staging, WhenPinningFailsChunksGoThroughPinnedBuffersAndStatsSaySo) {
  FakeGpuScope gpu;
  gpu.log().refuse_pin = true;
  Loader loader = gpu.loader(fake_gpu_options(2));
  std::int64_t batches = 0;
  for (; batches < 40; ++batches) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    for (int d = 0; d < 2; ++d) {
      const auto got = device_bytes(*b, d);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), b->chunk(d).pixels.begin()));
      ASSERT_TRUE(device_targets_match(b->chunk(d)));
    }
  }
  const Stats s = loader.stats();
  EXPECT_EQ(s.staging, StagingMode::kPinnedFallback);
  EXPECT_EQ(s.staging_note,
            "page-locking the arena failed (cudaHostRegister: fake: memlock limit reached); "
            "copying each chunk through pinned staging buffers");
  EXPECT_EQ(s.pinned_bytes, 0);
  EXPECT_EQ(s.host_copy_bytes, s.dma_bytes);
  EXPECT_GT(s.dma_bytes, 0);
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_EQ(gpu.log().copies_from_pinned_allocs, gpu.log().copies);  // never pageable memory
  EXPECT_EQ(gpu.log().copies_from_pageable, 0);
}

// The consumer drops each batch before its (slow) copies have run: the slot must not go back
// to the workers, who would rewrite the bytes the DMA has yet to read.
TEST(Staging, ASlotReturnsToTheWorkersOnlyAfterEveryDevicesCopyCompleted) {
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(15);
  Options o = fake_gpu_options(2);
  o.prefetch = 3;
  Loader loader = gpu.loader(o);
  for (int i = 0; i < 60; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    b->release();
  }
  auto last = loader.next();
  last->wait(0);  // each device's queue runs in order: every earlier copy has run now
  last->wait(1);
  last->release();
  const Stats s = loader.stats();
  EXPECT_EQ(s.batches, 61);
  EXPECT_EQ(s.released, 61);
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_GE(gpu.log().copies, 120);
  EXPECT_EQ(gpu.log().sources_changed_before_dma, 0);
}

TEST(Staging, EveryDeliveredBatchIsReleasedExactlyOnce) {
  FakeGpuScope gpu;
  Loader loader = gpu.loader(fake_gpu_options(1));
  auto first = loader.next();
  ASSERT_TRUE(first);
  Batch copy = *first;
  first->release();
  EXPECT_EQ(loader.stats().released, 0);  // `copy` still holds it
  copy.release();
  copy.release();  // an empty Batch: nothing more to give back
  EXPECT_EQ(loader.stats().released, 1);
  std::int64_t delivered = 1;
  while (auto b = loader.next()) ++delivered;
  EXPECT_EQ(loader.stats().batches, delivered);
  EXPECT_EQ(loader.stats().released, delivered);
}

TEST(Staging, HeldBatchesKeepTheirDeviceBytesWhileLaterBatchesFlow) {
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(1);
  Options o = fake_gpu_options(2);
  o.prefetch = 4;
  Loader loader = gpu.loader(o);
  struct Held {
    Batch batch;
    std::vector<std::uint8_t> bytes[2];
  };
  std::vector<Held> held;
  for (int i = 0; i < 10; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    held.push_back({*b, {device_bytes(*b, 0), device_bytes(*b, 1)}});
  }
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(loader.next());  // later slots: grown, then reused
  for (const Held& h : held) {
    for (int d = 0; d < 2; ++d) {
      EXPECT_TRUE(device_bytes(h.batch, d) == h.bytes[d]) << "batch " << h.batch.index();
      const auto host = h.batch.chunk(d).pixels;
      EXPECT_TRUE(std::equal(host.begin(), host.end(), h.bytes[d].begin()));
    }
  }
  EXPECT_GE(loader.stats().slots, 11);
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_EQ(gpu.log().copies_from_pinned_arena, gpu.log().copies);  // grown slots pinned too
}

TEST(Staging, RecordStreamMakesStokeWaitForTheConsumersWorkBeforeReuse) {
  FakeGpuScope gpu;
  Loader loader = gpu.loader(fake_gpu_options(1));
  {
    auto b = loader.next();
    ASSERT_TRUE(b);
    b->record_stream(1, nullptr);  // the consumer's stream (the legacy one, here)
    std::lock_guard lock(gpu.log().mutex);
    EXPECT_EQ(gpu.log().stream_waits, 0);  // recorded, applied at release
  }
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_EQ(gpu.log().stream_waits, 1);
}

// The consumer's stream still has work on the batch when it is dropped: the devices' next
// copies must wait for that work.
TEST(Staging, RecordStreamOrdersLaterCopiesAfterTheConsumersWork) {
  FakeGpuScope gpu;
  Options o = fake_gpu_options(1);
  o.prefetch = 2;
  Loader loader = gpu.loader(o);
  test::FakeConsumerStream consumer;
  {
    auto b = loader.next();
    ASSERT_TRUE(b);
    b->record_stream(0, reinterpret_cast<CUstream_st*>(&consumer));
    b->record_stream(1, reinterpret_cast<CUstream_st*>(&consumer));
  }
  std::int64_t enqueued_before = 0;  // copies of batches staged ahead, before the release
  {
    std::lock_guard lock(gpu.log().mutex);
    enqueued_before = gpu.log().copies;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const auto finished = std::chrono::steady_clock::now();
  consumer.finish();
  for (int i = 0; i < 4; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    b->wait(0);
    b->wait(1);
  }
  std::lock_guard lock(gpu.log().mutex);
  int later = 0;
  for (const auto& [number, when] : gpu.log().copies_executed) {
    if (number <= enqueued_before) continue;
    ++later;
    EXPECT_GE(when, finished) << "copy " << number << " ran before the consumer's work ended";
  }
  EXPECT_GE(later, 2);
}

// The consumer's stream may read the batch's host arrays too (its labels, say, copied from the
// page-locked slot): with the stream recorded, the slot goes back to the workers only after
// the stream has passed that work, not when the batch is dropped.
TEST(Staging, ARecordedStreamKeepsTheSlotFromTheWorkersUntilItPasses) {
  FakeGpuScope gpu;
  Options o = fake_gpu_options(2);
  o.prefetch = 4;
  Loader loader = gpu.loader(o);
  test::FakeConsumerStream consumer;
  const std::uint8_t* pixels = nullptr;
  const std::int32_t* labels = nullptr;
  std::vector<std::uint8_t> expected_pixels;
  std::vector<std::int32_t> expected_labels;
  {
    auto b = loader.next();
    ASSERT_TRUE(b);
    b->wait(0);  // stoke's own copies are done: only the consumer's work holds the slot now
    b->wait(1);
    pixels = b->pixels().data();
    labels = b->labels().data();
    expected_pixels.assign(b->pixels().begin(), b->pixels().end());
    expected_labels.assign(b->labels().begin(), b->labels().end());
    b->record_stream(1, reinterpret_cast<CUstream_st*>(&consumer));
  }
  // The workers fill free slots ahead of the consumer at once: given this one, they would have
  // written another batch into it by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_TRUE(std::equal(expected_pixels.begin(), expected_pixels.end(), pixels));
  EXPECT_TRUE(std::equal(expected_labels.begin(), expected_labels.end(), labels));
  consumer.finish();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(loader.next());  // the slot comes back into use
  EXPECT_FALSE(std::equal(expected_pixels.begin(), expected_pixels.end(), pixels));
}

// A loader on cuda:1 works in GPU 1's context on every thread it uses: its own, the consumer's
// (waits, releases) and the one that destroys it. None of them makes a context on GPU 0, which
// every rank of a job that sees all GPUs would otherwise do.
TEST(Staging, ALoaderOnGpu1NeverTouchesGpu0) {
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(1);
  Options o = test::fashion_options(2, 64);
  o.devices = DeviceSet::parse("cuda:1");
  o.dtype = DType::kFloat16;
  {
    Loader loader = gpu.loader(o);
    test::FakeConsumerStream consumer;
    consumer.finish();
    for (int i = 0; i < 20; ++i) {
      auto b = loader.next();
      ASSERT_TRUE(b);
      EXPECT_EQ(b->chunk(0).cuda_device, 1);
      b->wait_on(0, reinterpret_cast<CUstream_st*>(&consumer));
      b->record_stream(0, reinterpret_cast<CUstream_st*>(&consumer));
      b->wait(0);
    }
  }
  std::lock_guard lock(gpu.log().mutex);
  ASSERT_GE(gpu.log().touched.size(), 2u);  // at least the stager and this thread
  for (const auto& [thread, ordinals] : gpu.log().touched)
    EXPECT_EQ(ordinals, std::set<int>{1}) << "a thread touched another GPU than cuda:1";
}

TEST(Staging, PinnedFallbackBuffersBelongToTheLoadersGpu) {
  FakeGpuScope gpu;
  gpu.log().refuse_pin = true;
  Options o = test::fashion_options(1, 64);
  o.devices = DeviceSet::parse("cuda:3");
  {
    Loader loader = gpu.loader(o);
    for (int i = 0; i < 5; ++i) {
      auto b = loader.next();
      ASSERT_TRUE(b);
      b->wait(0);
      ASSERT_TRUE(device_targets_match(b->chunk(0)));
    }
  }
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_GT(gpu.log().copies_from_pinned_allocs, 0);
  EXPECT_TRUE(gpu.log().pinned_allocs.empty());  // all freed
  for (const auto& [thread, ordinals] : gpu.log().touched) EXPECT_EQ(ordinals, std::set<int>{3});
}

// wait_on enqueues the consumer stream's wait and returns: the host does not wait for copies
// that take a quarter of a second.
TEST(Staging, WaitOnMakesTheConsumersStreamWaitWithoutBlockingTheHost) {
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(250);
  Loader loader = gpu.loader(fake_gpu_options(1));
  auto b = loader.next();  // delivered once enqueued, before the copies have run
  ASSERT_TRUE(b);
  test::FakeConsumerStream consumer;
  b->wait_on(0, reinterpret_cast<CUstream_st*>(&consumer));
  b->wait_on(1, reinterpret_cast<CUstream_st*>(&consumer));
  {
    std::lock_guard lock(gpu.log().mutex);
    EXPECT_EQ(gpu.log().event_waits, 2);
    // The first batch's four copies (two per device, enqueued first) take 500 ms on each
    // device's queue; a host wait would have returned only after all of them.
    EXPECT_LT(gpu.log().copies_executed.size(), 4u);
  }
  EXPECT_THROW(b->wait_on(2, nullptr), Error);
  b->wait(0);
  b->wait(1);
}

// The devices' completion callbacks (CUDA's callback thread, which holds up its stream while
// one runs) never take the loader's lock: they complete while another thread holds it.
TEST(Staging, DeviceCallbacksNeverWaitForTheLoadersLock) {
  FakeGpuScope gpu;
  // Slow copies keep the first batches' callbacks in flight when the lock is taken; one device,
  // so that each callback is the slot's last and signals the loader.
  gpu.log().copy_delay = std::chrono::milliseconds(150);
  Options o = test::fashion_options(1, 64);
  o.devices = DeviceSet::parse("cuda:0");
  o.prefetch = 3;
  Loader loader = gpu.loader(o);
  auto first = loader.next();
  ASSERT_TRUE(first);
  bool completed_under_lock = false;
  detail::LoaderAccess::while_locked(loader, [&] {
    std::int64_t before = 0;
    {
      std::lock_guard lock(gpu.log().mutex);
      before = gpu.log().callbacks_returned;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!completed_under_lock && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard lock(gpu.log().mutex);
      completed_under_lock = gpu.log().callbacks_returned > before;
    }
  });
  EXPECT_TRUE(completed_under_lock) << "no device callback returned while the lock was held";
  first->release();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(loader.next());  // and the loader goes on
}

// With no worker processes the consumer's own thread fills slots; it must notice slots the
// devices finished reading even though nobody takes the lock to tell it.
TEST(Staging, AnInProcessLoaderOnAGpuDeliversTheSameBytes) {
  const test::Delivered expected = host_reference(0, 40);
  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(1);
  Loader loader = gpu.loader(fake_gpu_options(0));
  test::Delivered got;
  for (int i = 0; i < 40; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    test::append(got, *b);
  }
  EXPECT_TRUE(got == expected);
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_EQ(gpu.log().sources_changed_before_dma, 0);
}

// A reposition lands while the stager is inside stage() for a batch of the old epoch: that slot
// must come back to the pool (no slot leaks), and the new epoch is delivered exactly.
TEST(Staging, ARepositionDuringStagingLeaksNoSlot) {
  const test::Delivered expected = host_reference(2, 30);

  FakeGpuScope gpu;
  std::mutex m;
  std::condition_variable cv;
  bool inside = false, go = false;
  gpu.log().on_enqueue_copy = [&] {
    std::unique_lock lock(m);
    if (go) return;
    inside = true;
    cv.notify_all();
    cv.wait(lock, [&] { return go; });
  };
  Options o = fake_gpu_options(2);
  o.prefetch = 2;
  Loader loader = gpu.loader(o);
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return inside; });  // the stager is blocked inside stage()
  }
  loader.set_epoch(2);
  {
    std::lock_guard lock(m);
    go = true;
  }
  cv.notify_all();
  EXPECT_TRUE(test::collect(loader, 30) == expected);
  // Both slots are usable: holding two batches needs no third slot.
  auto a = loader.next();
  auto b = loader.next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(loader.stats().slots, 2);
}

TEST(Staging, RepositioningWhileCopiesAreInFlightDeliversTheRightEpoch) {
  const test::Delivered expected = host_reference(3, 20);

  FakeGpuScope gpu;
  gpu.log().copy_delay = std::chrono::milliseconds(3);
  Loader loader = gpu.loader(fake_gpu_options(2));
  test::collect(loader, 5);
  loader.set_epoch(3);
  const test::Delivered got = test::collect(loader, 20);
  EXPECT_TRUE(got == expected);
  auto last = loader.next();
  last->wait(0);
  last->wait(1);
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_EQ(gpu.log().sources_changed_before_dma, 0);
}

TEST(Staging, TheArenaIsUnpinnedWhenTheLastBatchIsGone) {
  FakeGpuScope gpu;
  std::optional<Batch> kept;
  {
    Loader loader = gpu.loader(fake_gpu_options(1));
    kept = loader.next();
  }
  {
    std::lock_guard lock(gpu.log().mutex);
    EXPECT_EQ(gpu.log().unpinned, 0);  // the held batch keeps its slot mapped and pinned
    EXPECT_FALSE(gpu.log().pinned.empty());
  }
  kept->wait(0);
  kept.reset();
  std::lock_guard lock(gpu.log().mutex);
  EXPECT_TRUE(gpu.log().pinned.empty());
}

class HostNormalize : public ::testing::TestWithParam<std::tuple<DType, Layout, int>> {};

// Host devices run the CPU kernel straight from the arena: bit-identical to calling it on the
// delivered uint8 pixels, for every dtype and layout, in-process and with workers.
TEST_P(HostNormalize, OutputIsBitIdenticalToTheCpuReference) {
  const auto [dtype, layout, workers] = GetParam();
  Options o = test::fashion_options(workers, 60);
  o.devices = DeviceSet::parse("cpu:3");
  o.dtype = dtype;
  o.layout = layout;
  o.mean = {0.5f};
  o.stddev = {0.5f};
  Loader loader(o);
  for (int i = 0; i < 12; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    for (int d = 0; d < 3; ++d) {
      const DeviceChunk c = b->chunk(d);
      EXPECT_EQ(c.cuda_device, -1);
      EXPECT_EQ(c.dtype, dtype);
      EXPECT_EQ(c.layout, layout);
      EXPECT_EQ(c.shape, layout == Layout::kNCHW ? (std::array<std::int64_t, 4>{20, 1, 28, 28})
                                                 : (std::array<std::int64_t, 4>{20, 28, 28, 1}));
      const std::vector<std::uint8_t> want = reference(c, o, 28, 28, 1);
      ASSERT_EQ(c.bytes, want.size());
      ASSERT_EQ(std::memcmp(c.data, want.data(), want.size()), 0) << "batch " << i << " dev " << d;
    }
  }
  EXPECT_EQ(loader.stats().staging, StagingMode::kHost);
  EXPECT_EQ(loader.stats().dma_copies, 0);
}

INSTANTIATE_TEST_SUITE_P(DTypes, HostNormalize,
                         ::testing::Values(std::tuple{DType::kFloat32, Layout::kNCHW, 2},
                                           std::tuple{DType::kFloat16, Layout::kNHWC, 2},
                                           std::tuple{DType::kBFloat16, Layout::kNCHW, 0},
                                           std::tuple{DType::kFloat32, Layout::kNHWC, 0}));

TEST(Staging, NormalizingDoesNotChangeTheUint8Bytes) {
  Options a = test::fashion_options(2, 64);
  a.devices = DeviceSet::parse("cpu:2");
  Loader plain(a);
  const test::Delivered expected = test::collect(plain, 30);
  Options b = a;
  b.dtype = DType::kFloat32;
  Loader normalized(b);
  EXPECT_TRUE(test::collect(normalized, 30) == expected);
  EXPECT_EQ(plain.stats().staging, StagingMode::kNone);
}

TEST(Staging, MeanAndStddevAreChecked) {
  Options o = test::fashion_options(0, 64);
  o.dtype = DType::kFloat16;
  o.mean = {0.1f, 0.2f};
  try {
    Loader loader(o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "mean has 2 values; give one per channel (1), a single value for all, or none "
                 "for the default");
  }
  o.mean = {};
  o.stddev = {0.0f};
  try {
    Loader loader(o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "dtype float16: normalize: stddev[0] must be finite and nonzero (got 0.000000)");
  }
}

}  // namespace
}  // namespace stoke
