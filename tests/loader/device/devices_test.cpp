// GPU discovery without side effects: NVML or the driver's /proc entries, CUDA_VISIBLE_DEVICES
// applied like the CUDA runtime, and a worker binary with no CUDA in it.
#include "stoke/devices.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <fstream>

#include "device/device_discovery.hpp"  // private: the injectable sources
#include "test_support.hpp"
#include "tuning/cores.hpp"  // private: the loader's core count

namespace stoke {
namespace {

const std::vector<std::string> kUuids = {"GPU-aaaa1111-0000", "GPU-bbbb2222-0000",
                                         "GPU-bbbb3333-0000"};

TEST(Cores, AreAtLeastOneAndNoMoreThanTheAffinityMaskAllows) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const int cores = detail::available_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, CPU_COUNT(&set));
  // Narrowing the mask to one core narrows the answer.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(detail::available_cores(), 1);
  ASSERT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
}

TEST(Devices, VisibleDevicesTakeIndicesAndUuidPrefixesInTheirOrder) {
  EXPECT_EQ(apply_visible_devices("2,0", kUuids), (std::vector<int>{2, 0}));
  EXPECT_EQ(apply_visible_devices(" 1 ", kUuids), (std::vector<int>{1}));
  EXPECT_EQ(apply_visible_devices("GPU-bbbb3,GPU-aaaa", kUuids), (std::vector<int>{2, 0}));
  EXPECT_EQ(apply_visible_devices("GPU-aaaa1111-0000", kUuids), (std::vector<int>{0}));
}

TEST(Devices, VisibleDevicesEndAtTheFirstInvalidUnknownAmbiguousOrRepeatedEntry) {
  EXPECT_EQ(apply_visible_devices("0,7,1", kUuids), (std::vector<int>{0}));
  EXPECT_EQ(apply_visible_devices("1,x,0", kUuids), (std::vector<int>{1}));
  EXPECT_EQ(apply_visible_devices("0,GPU-bbbb", kUuids), (std::vector<int>{0}));  // ambiguous
  EXPECT_EQ(apply_visible_devices("1,1,2", kUuids), (std::vector<int>{1}));
  EXPECT_TRUE(apply_visible_devices("-1", kUuids).empty());
  EXPECT_TRUE(apply_visible_devices("", kUuids).empty());
  EXPECT_TRUE(apply_visible_devices("NoDevFiles", kUuids).empty());
}

TEST(Devices, NoDriverMeansZeroGpusWithoutThrowing) {
  DiscoverySources s;
  s.nvml_library = "libnvidia-ml-absent.so.1";
  s.procfs_root = "/nonexistent/driver/nvidia/gpus";
  const DeviceDiscovery d = discover_devices(s);
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_EQ(d.method, "none");
  EXPECT_NE(d.detail.find("libnvidia-ml-absent.so.1 not found"), std::string::npos) << d.detail;
  // This machine has no driver either: the cached answer is the same, and `auto` means cpu:1.
  if (devices().method == "none") {
    EXPECT_TRUE(devices().gpus.empty());
    EXPECT_EQ(DeviceSet::parse("auto").resolve().to_string(), "cpu:1");
  }
}

TEST(Devices, AutoIsParsedWithoutDiscoveryAndResolvedToTheGpusFoundOrOneHostDevice) {
  const DeviceSet automatic = DeviceSet::parse("auto");
  EXPECT_EQ(automatic.kind, DeviceSet::Kind::kAuto);
  EXPECT_EQ(automatic.to_string(), "auto");
  const DeviceSet resolved = automatic.resolve();
  if (devices().gpus.empty()) {
    EXPECT_EQ(resolved.to_string(), "cpu:1");
  } else {
    EXPECT_EQ(resolved.kind, DeviceSet::Kind::kCuda);
    EXPECT_EQ(resolved.count, static_cast<int>(devices().gpus.size()));
  }
  // Sets that name their devices resolve to themselves, without discovery.
  for (const char* spec : {"cpu", "cpu:3", "cuda:0,3"})
    EXPECT_EQ(DeviceSet::parse(spec).resolve().to_string(), DeviceSet::parse(spec).to_string())
        << spec;
}

TEST(Devices, ALoaderGivenAutoDrivesWhatAutoResolvesTo) {
  if (!devices().gpus.empty()) GTEST_SKIP() << "auto means this machine's GPUs";
  Options o = test::fashion_options(0);
  o.devices = DeviceSet::parse("auto");
  Loader loader(o);
  std::optional<Batch> b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->device_count(), 1);
}

TEST(Devices, DriverProcEntriesAreReadInBusOrderAndFilteredByVisibleDevices) {
  test::TempDir root;
  const auto gpu = [&](const char* bus, const char* model, const char* uuid) {
    std::filesystem::create_directories(root.path() / bus);
    std::ofstream(root.path() / bus / "information")
        << "Model: \t\t " << model << "\nIRQ:\t\t 42\nGPU UUID: \t " << uuid
        << "\nBus Location: \t " << bus << "\n";
  };
  gpu("0000:3b:00.0", "NVIDIA H200", "GPU-bbbb2222-0000");
  gpu("0000:19:00.0", "NVIDIA H100 80GB HBM3", "GPU-aaaa1111-0000");
  DiscoverySources s;
  s.nvml_library = "libnvidia-ml-absent.so.1";
  s.procfs_root = root.str();
  DeviceDiscovery d = discover_devices(s);
  ASSERT_EQ(d.method, "procfs");
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.gpus[0].pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(d.gpus[1].uuid, "GPU-bbbb2222-0000");
  s.has_visible_devices = true;
  s.visible_devices = "GPU-bbbb";
  d = discover_devices(s);
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.gpus[0].index, 0);
  EXPECT_EQ(d.gpus[0].physical_index, 1);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA H200");
}

TEST(Devices, CudaDeviceSetsParseAndALoaderWithoutThoseGpusSaysWhy) {
  const DeviceSet d = DeviceSet::parse("cuda:0,3");
  EXPECT_EQ(d.kind, DeviceSet::Kind::kCuda);
  EXPECT_EQ(d.count, 2);
  EXPECT_EQ(d.to_string(), "cuda:0,3");
  for (const char* bad : {"cuda:", "cuda:0,0", "cuda:x", "cuda:-1"})
    EXPECT_THROW(DeviceSet::parse(bad), ConfigError) << bad;
  if (devices().gpus.size() >= 4) GTEST_SKIP() << "this machine has GPUs 0 and 3";
  Options o = test::fashion_options(0);
  o.devices = d;
  try {
    Loader loader(o);
    FAIL();
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("devices cuda:0,3: ", 0), 0u) << what;
    if (devices().gpus.empty()) {
      // CUDA build: the runtime's own error; CPU-only build: no CUDA support.
      EXPECT_TRUE(what.find("the CUDA runtime finds no usable GPU") != std::string::npos ||
                  what.find("this build of stoke has no CUDA support") != std::string::npos)
          << what;
      EXPECT_NE(what.find("use cpu:G"), std::string::npos) << what;
    } else {
      EXPECT_NE(what.find("GPU 3 does not exist"), std::string::npos) << what;
    }
  }
}

// CMake links cudart statically by default, so the worker's /proc/PID/maps proves nothing:
// look at the binary itself, its dynamic dependencies and its symbols.
TEST(Devices, TheWorkerBinaryContainsAndLoadsNoCuda) {
  const std::string cmd =
      std::string("readelf --dynamic --syms --wide ") + STOKE_WORKER_PATH + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out.substr(0, 500);
  ASSERT_NE(out.find("(NEEDED)"), std::string::npos) << "readelf printed no dependencies";
  std::string lower(out.size(), ' ');
  std::transform(out.begin(), out.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* word : {"cuda", "cublas", "nccl", "nvrtc", "nvidia"})
    EXPECT_EQ(lower.find(word), std::string::npos) << "the worker mentions " << word;
}

}  // namespace
}  // namespace stoke
