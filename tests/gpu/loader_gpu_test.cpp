// The loader on a real GPU: bytes that arrive on the device equal the host batch (uint8) or the
// CPU reference (float dtypes) bit for bit, the arena is page-locked so no host copy happens,
// held batches keep their device bytes, and a consumer stream recorded on a batch is waited
// for. Skipped without a GPU (failed when STOKE_REQUIRE_GPU=1). Makes its own IDX dataset, so
// it needs no test data on the GPU machine.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../cuda_test_support.hpp"
#include "stoke/kernels/normalize.hpp"
#include "stoke/loader.hpp"
#include "stoke/names.hpp"

namespace stoke {
namespace {

namespace fs = std::filesystem;

void put_be32(std::ofstream& out, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24),
                              static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

// A t10k IDX pair of `n` random 28x28 images in a fresh folder.
class IdxData {
 public:
  explicit IdxData(int n) {
    std::string tmpl = (fs::temp_directory_path() / "stoke-gpu-test-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    std::mt19937 rng(5);
    std::ofstream images(dir_ / "t10k-images-idx3-ubyte", std::ios::binary);
    for (std::uint32_t v : {0x803u, static_cast<std::uint32_t>(n), 28u, 28u}) put_be32(images, v);
    std::vector<char> pixels(static_cast<std::size_t>(n) * 28 * 28);
    for (char& p : pixels) p = static_cast<char>(rng() & 0xff);
    images.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
    std::ofstream labels(dir_ / "t10k-labels-idx1-ubyte", std::ios::binary);
    for (std::uint32_t v : {0x801u, static_cast<std::uint32_t>(n)}) put_be32(labels, v);
    for (int i = 0; i < n; ++i) labels.put(static_cast<char>(i % 10));
  }
  ~IdxData() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

Options gpu_options(const IdxData& data, DType dtype) {
  Options o;
  o.data = data.path();
  o.split = Split::kTest;
  o.batch = 64;
  o.workers = 2;
  o.seed = 3;
  o.devices = DeviceSet::parse("cuda:0");
  o.dtype = dtype;
  o.mean = {0.5f};
  o.stddev = {0.25f};
  o.log = [](std::string_view) {};
  return o;
}

std::vector<std::uint8_t> read_back(const Batch& b, int dev) {
  b.wait(dev);
  const DeviceChunk c = b.chunk(dev);
  std::vector<std::uint8_t> host(c.bytes);
  EXPECT_EQ(cudaMemcpy(host.data(), c.data, c.bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

std::vector<std::uint8_t> cpu_reference(const DeviceChunk& c, DType dtype) {
  kernels::NormalizeParams p;
  p.samples = c.samples;
  p.height = 28;
  p.width = 28;
  p.channels = 1;
  p.dtype = dtype;
  p.layout = Layout::kNCHW;
  p.mean[0] = 0.5f * 255.0f;
  p.stddev[0] = 0.25f * 255.0f;
  std::vector<std::uint8_t> out(kernels::normalized_bytes(p));
  kernels::normalize_cpu(p, c.pixels.data(), out.data());
  return out;
}

class LoaderGpu : public ::testing::TestWithParam<DType> {};

TEST_P(LoaderGpu, DeviceBytesMatchTheHostBatchBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  const DType dtype = GetParam();
  IdxData data(1000);
  Loader loader(gpu_options(data, dtype));
  int batches = 0;
  while (auto b = loader.next()) {
    const DeviceChunk c = b->chunk(0);
    EXPECT_EQ(c.cuda_device, 0);
    ASSERT_NE(c.ready, nullptr);
    const std::vector<std::uint8_t> got = read_back(*b, 0);
    std::vector<std::int32_t> labels(c.labels.size());
    std::vector<std::uint8_t> valid(c.valid.size());
    ASSERT_EQ(cudaMemcpy(labels.data(), c.device_labels, labels.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(valid.data(), c.device_valid, valid.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_TRUE(std::equal(labels.begin(), labels.end(), c.labels.begin()));
    ASSERT_TRUE(std::equal(valid.begin(), valid.end(), c.valid.begin()));
    if (dtype == DType::kUInt8) {
      ASSERT_TRUE(std::equal(got.begin(), got.end(), c.pixels.begin(), c.pixels.end()));
    } else {
      ASSERT_TRUE(got == cpu_reference(c, dtype)) << "batch " << batches;
    }
    ++batches;
  }
  EXPECT_EQ(batches, 16);
  const Stats s = loader.stats();
  EXPECT_EQ(s.staging, StagingMode::kRegistered) << s.staging_note;
  EXPECT_EQ(s.host_copy_bytes, 0);
  EXPECT_EQ(s.dma_copies, 2 * s.staged_batches);  // the pixels and the targets
  EXPECT_GT(s.pinned_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(DTypes, LoaderGpu,
                         ::testing::Values(DType::kUInt8, DType::kFloat32, DType::kFloat16,
                                           DType::kBFloat16));

// random_erasing after the normalize, in the GPU's kernel: the bytes two host devices get, for
// constant values and both kinds of noise.
TEST(LoaderGpuErasing, MatchesHostDevicesBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(1000);
  for (const char* step : {"random_erasing 0.7 0.02 0.33 0.3 3.3 -1.5", "random_erasing_pixel 0.7",
                           "random_erasing_color 0.7"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
      SCOPED_TRACE(std::string(step) + " " + kernels::dtype_name(dtype));
      Options o = gpu_options(data, dtype);
      o.pipeline = make_pipeline(28, 28, 1, parse_steps(step));
      Loader on_gpu(o);
      o.devices = DeviceSet::parse("cpu:1");
      Loader on_host(o);
      int batches = 0, erased = 0;
      while (auto b = on_gpu.next()) {
        auto h = on_host.next();
        ASSERT_TRUE(h);
        const DeviceChunk c = h->chunk(0);
        const auto* want = static_cast<const std::uint8_t*>(c.data);
        ASSERT_TRUE(read_back(*b, 0) == std::vector<std::uint8_t>(want, want + c.bytes))
            << "batch " << batches;
        for (const AppliedOp& op : b->applied_ops()) erased += op.op != ImageOp::kNone ? 1 : 0;
        ++batches;
      }
      EXPECT_EQ(batches, 16);
      EXPECT_GT(erased, 600);  // of 1,024 at p = 0.7
    }
  }
}

// MixUp/CutMix after the normalize and erasing, in the GPU's kernel, and the soft labels copied
// with the batch: the bytes a host device gets, in every rule and mode.
TEST(LoaderGpuMixing, MatchesHostDevicesBitForBit) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(1000);
  const struct {
    MixRule rule;
    MixMode mode;
  } kinds[] = {{MixRule::kTorchvision, MixMode::kBatch},
               {MixRule::kTimm, MixMode::kBatch},
               {MixRule::kTimm, MixMode::kPair},
               {MixRule::kTimm, MixMode::kElem}};
  for (const auto& kind : kinds) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
      SCOPED_TRACE(std::string(mix_rule_name(kind.rule)) + " " + mix_mode_name(kind.mode) + " " +
                   kernels::dtype_name(dtype));
      Options o = gpu_options(data, dtype);
      o.pipeline = make_pipeline(28, 28, 1, parse_steps("random_erasing_pixel 0.3"));
      o.mixup_alpha = 0.8;
      o.cutmix_alpha = 1.0;
      o.mix_rule = kind.rule;
      o.mix_mode = kind.mode;
      o.num_classes = 10;
      o.label_smoothing = 0.1;
      Loader on_gpu(o);
      o.devices = DeviceSet::parse("cpu:1");
      Loader on_host(o);
      int batches = 0;
      while (auto b = on_gpu.next()) {
        auto h = on_host.next();
        ASSERT_TRUE(h);
        const DeviceChunk c = h->chunk(0);
        const auto* want = static_cast<const std::uint8_t*>(c.data);
        ASSERT_TRUE(read_back(*b, 0) == std::vector<std::uint8_t>(want, want + c.bytes))
            << "batch " << batches;
        const DeviceChunk g = b->chunk(0);
        std::vector<float> soft(c.soft_labels.size());
        ASSERT_EQ(cudaMemcpy(soft.data(), g.device_soft_labels, soft.size() * 4,
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_TRUE(std::equal(soft.begin(), soft.end(), c.soft_labels.begin()));
        ++batches;
      }
      EXPECT_EQ(batches, 16);
    }
  }
}

TEST(LoaderGpuLifetime, HeldBatchesKeepTheirDeviceBytes) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(4000);
  Loader loader(gpu_options(data, DType::kFloat32));
  std::vector<std::pair<Batch, std::vector<std::uint8_t>>> held;
  for (int i = 0; i < 10; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    held.emplace_back(*b, read_back(*b, 0));
  }
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(loader.next());
  for (const auto& [batch, bytes] : held) {
    EXPECT_TRUE(read_back(batch, 0) == bytes) << "batch " << batch.index();
    EXPECT_TRUE(bytes == cpu_reference(batch.chunk(0), DType::kFloat32));
  }
}

// The consumer's stream is still busy with the batch when it drops it; with record_stream the
// batch's device buffer must not be rewritten before that work ends. The consumer copies the
// buffer out on its stream behind a host callback that sleeps 100 ms, so a premature rewrite
// would change what it copies.
void CUDART_CB sleep_100ms(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST(LoaderGpuLifetime, RecordStreamProtectsWorkStillQueuedOnTheConsumerStream) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(4000);
  Options o = gpu_options(data, DType::kUInt8);
  o.prefetch = 2;
  Loader loader(o);
  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  std::vector<std::vector<std::uint8_t>> expected, copied;
  std::vector<void*> outs;
  for (int i = 0; i < 12; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    const DeviceChunk c = b->chunk(0);
    expected.emplace_back(c.pixels.begin(), c.pixels.end());
    void* out = nullptr;
    ASSERT_EQ(cudaMallocHost(&out, c.bytes), cudaSuccess);
    outs.push_back(out);
    ASSERT_EQ(cudaStreamWaitEvent(mine, c.ready, 0), cudaSuccess);
    ASSERT_EQ(cudaLaunchHostFunc(mine, sleep_100ms, nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(out, c.data, c.bytes, cudaMemcpyDeviceToHost, mine), cudaSuccess);
    b->record_stream(0, mine);
  }  // each batch is dropped while `mine` still has to read it
  ASSERT_EQ(cudaStreamSynchronize(mine), cudaSuccess);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto* p = static_cast<const std::uint8_t*>(outs[i]);
    EXPECT_TRUE(std::equal(expected[i].begin(), expected[i].end(), p)) << "batch " << i;
    cudaFreeHost(outs[i]);
  }
  cudaStreamDestroy(mine);
}

// wait_on makes the consumer's stream wait on the GPU: a copy enqueued right after it, with no
// host wait anywhere, reads the complete chunk. Both an own stream and the special handles.
TEST(LoaderGpuLifetime, WaitOnOrdersTheConsumersStreamAfterTheChunk) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(2000);
  Loader loader(gpu_options(data, DType::kUInt8));
  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  const cudaStream_t streams[] = {mine, cudaStreamLegacy, cudaStreamPerThread};
  for (int i = 0; i < 9; ++i) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    const cudaStream_t s = streams[i % 3];
    const DeviceChunk c = b->chunk(0);
    b->wait_on(0, s);
    std::vector<std::uint8_t> out(c.bytes);
    ASSERT_EQ(cudaMemcpyAsync(out.data(), c.data, c.bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), c.pixels.begin())) << "batch " << i;
  }
  cudaStreamDestroy(mine);
}

// The calling thread's current context, through the driver API (the runtime cannot tell "no
// context" from "device 0").
CUcontext current_context() {
  static const PFN_cuCtxGetCurrent_v4000 get = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f, 4000, cudaEnableDefault, &found);
    return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(f)
                                                : nullptr;
  }();
  CUcontext c = nullptr;
  if (get == nullptr || get(&c) != CUDA_SUCCESS) ADD_FAILURE() << "cuCtxGetCurrent is unavailable";
  return c;
}

// A thread that never used CUDA makes a loader, takes batches, waits on them and drops them:
// afterwards it still has no current context. (A runtime-only save/restore would leave GPU 0's
// primary context current, and make one on GPU 0 in a process that uses another GPU.)
TEST(LoaderGpuContexts, StokeLeavesAThreadWithoutAContextAsItFoundIt) {
  STOKE_SKIP_WITHOUT_GPU();
  IdxData data(1000);
  std::vector<CUcontext> seen;
  std::thread fresh([&] {
    seen.push_back(current_context());
    {
      Loader loader(gpu_options(data, DType::kFloat16));
      seen.push_back(current_context());
      for (int i = 0; i < 5; ++i) {
        auto b = loader.next();
        ASSERT_TRUE(b);
        b->wait(0);
        b->wait_on(0, cudaStreamPerThread);
        b->record_stream(0, cudaStreamPerThread);
        seen.push_back(current_context());
      }
    }
    seen.push_back(current_context());
  });
  fresh.join();
  ASSERT_EQ(seen.size(), 8u);
  for (std::size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], nullptr) << "a context was left current at step " << i;
}

}  // namespace
}  // namespace stoke
