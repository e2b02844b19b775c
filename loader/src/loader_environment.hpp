#pragma once
// What a loader takes from its surroundings besides its Options: the GPU backend and the time
// its deadlines read. The public Loader(Options) uses the real ones (CUDA, the steady clock);
// tests make a loader on a fake GPU, or one whose time they move by hand, through LoaderAccess,
// which stays out of the public headers (LevelDB's Env, in a small way).
//
// Thread-safety: a LoaderEnvironment is copied into the loader at construction; its factory is
// called once, on the constructing thread; the time source is shared with the loader's threads
// (TimeSource is thread-safe).

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "common/time_source.hpp"
#include "device/device_backend.hpp"
#include "stoke/loader.hpp"

namespace stoke::detail {

struct LoaderEnvironment {
  // Makes the backend for a CUDA device set; empty: make_cuda_backend().
  std::function<std::unique_ptr<DeviceBackend>(const DeviceSet&)> gpu_backend;
  // What the supervisor's deadlines, the prefetcher's retries and the stall monitor read; null:
  // steady_time().
  std::shared_ptr<const TimeSource> time;
};

struct LoaderAccess {
  static Loader make(Options options, const LoaderEnvironment& env) {
    return Loader(std::move(options), env);
  }
  // Runs f while holding the loader's lock: tests of what must never wait for it.
  static void while_locked(Loader& loader, const std::function<void()>& f);
  // The chunks in the ring of the worker process `pid` that it has not taken yet (0 when no
  // worker record names it): a test that stops a worker waits for work to reach it.
  static std::uint64_t chunks_queued_for(Loader& loader, pid_t pid);
};

}  // namespace stoke::detail
