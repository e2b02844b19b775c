#pragma once
// The stager thread: moves ready slots to their devices, earliest batch first and at most
// kStageAhead batches beyond the consumer's next one, so the copies (and the normalize step) of
// the next batches run while the consumer computes on the current one.
//
// Thread-safety: constructed and destroyed by the loader's owner; its thread takes
// LoaderCore::mutex only around slot-table changes, never while staging enqueues device work.

#include <memory>
#include <string>
#include <thread>

#include "loader_core.hpp"

namespace stoke::detail {

inline constexpr std::int64_t kStageAhead = 2;  // batches staged beyond the consumer's next one

class Stager {
 public:
  // Starts the thread. `devices` names the devices in error messages ("cuda:0,1").
  Stager(std::shared_ptr<LoaderCore> core, std::string devices);
  // REQUIRES: core->stop was set and core->cv notified, else this waits for that.
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

 private:
  void run() EXCLUDES(core_->mutex);
  // Stages `slot` with the lock released; false when the loader failed.
  bool stage(int slot) REQUIRES(core_->mutex);

  std::shared_ptr<LoaderCore> core_;
  const std::string devices_;
  std::thread thread_;
};

}  // namespace stoke::detail
