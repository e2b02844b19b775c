#pragma once
// The stager thread: moves ready slots to their devices, earliest batch first and at most
// kStageAhead batches beyond the consumer's next one, so the copies (and the normalize step) of
// the next batches run while the consumer computes on the current one.
//
// The stager sees the loader only as a StageQueue: the batches to stage, one at a time. The
// queue over the loader's slot table (stage_queue()) decides which batch and when; the stager
// copies it, with no lock held, and says so.
//
// Thread-safety: a Stager is constructed and destroyed by the loader's owner; its thread calls
// the queue, whose methods take the loader's lock themselves, and never holds it while staging
// enqueues device work.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "consumer/batch_mixer.hpp"
#include "consumer/loader_core.hpp"
#include "device/staging.hpp"

namespace stoke::detail {

inline constexpr std::int64_t kStageAhead = 2;  // batches staged beyond the consumer's next one

class StageQueue {
 public:
  struct Job {
    int slot = -1;
    std::int64_t seq = -1;            // the batch in the slot
    bool copy = true;                 // false: a batch with a data error, passed on uncopied
    std::int64_t epoch = 0;           // the batch's epoch,
    std::int64_t first_position = 0;  // and its first sample's position (EpochPlan)
  };
  virtual ~StageQueue() = default;
  // The next batch to stage, marked as being staged (its device transfer begun when it is
  // copied); waits for one. Nullopt once the loader stops.
  virtual std::optional<Job> take() = 0;
  // The job's batch is on its devices: the consumer may have it.
  virtual void staged(const Job& job) = 0;
  // Staging failed: the loader stops with `error`.
  virtual void fail(std::exception_ptr error) = 0;
};

// The queue over `core`'s slot table: the earliest ready batch at most kStageAhead past the
// consumer's next one. REQUIRES: core->staging is set.
std::unique_ptr<StageQueue> stage_queue(std::shared_ptr<LoaderCore> core);

class Stager {
 public:
  // Starts the thread. `devices` names the devices in error messages ("cuda:0,1"). `mixer`
  // (null: none) writes each batch's mixing and soft labels into its slot before it is staged.
  // REQUIRES: `staging` and `mixer` outlive the Stager.
  Stager(std::unique_ptr<StageQueue> queue, Staging& staging, std::string devices,
         const BatchMixer* mixer = nullptr);
  // REQUIRES: the loader was stopped and its waiters woken, else this waits for that.
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

 private:
  void run();

  const std::unique_ptr<StageQueue> queue_;
  Staging& staging_;
  const std::string devices_;
  const BatchMixer* const mixer_;
  std::thread thread_;
};

}  // namespace stoke::detail
