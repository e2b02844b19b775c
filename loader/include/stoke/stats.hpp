#pragma once
// Loader statistics. Thread-safety: value type (a snapshot).

#include <cstdint>
#include <map>
#include <string>

namespace stoke {

struct Stats {
  std::int64_t batches = 0;  // delivered
  std::int64_t samples = 0;  // delivered, padding included
  std::int64_t padded = 0;   // delivered padding repeats
  std::int64_t skipped = 0;  // samples replaced under OnError::kSkip, index rejects included
  std::map<std::string, std::int64_t> skipped_by_reason;
  std::int64_t worker_restarts = 0;

  double startup_s = 0;      // construction to first delivered batch
  double active_s = 0;       // first to last delivered batch
  double samples_per_s = 0;  // samples delivered after the first batch / active_s
  double wait_s = 0;         // time the consumer spent inside next() after the first batch
  double wait_fraction = 0;  // wait_s / active_s

  // Delivered batches the consumer has released (each counted once, whatever its copies).
  std::int64_t released = 0;

  // Staging to the devices (GPUs, or host devices with a float dtype). staging is "none" (host
  // devices, uint8: the consumer reads the arena), "host" (normalized on host devices),
  // "registered" (DMA straight from the page-locked arena) or "pinned-fallback" (page-locking
  // failed for the reason in staging_note; each chunk is copied on the host into a pinned
  // buffer first, counted in host_copy_bytes).
  std::string staging = "none";
  std::string staging_note;
  std::int64_t staged_batches = 0;
  std::int64_t dma_copies = 0;  // host-to-device copies
  std::int64_t dma_bytes = 0;
  std::int64_t host_copy_bytes = 0;  // 0 on the registered path
  std::int64_t pinned_bytes = 0;     // arena bytes page-locked
  std::int64_t device_bytes = 0;     // batch buffers allocated on the devices

  // Where the producers' time went, summed over workers (seconds of their threads): reading
  // files, decoding them, and augmenting (everything else, writing the slot included). With
  // wait_s, the consumer's time spent waiting, these say which stage to speed up.
  double read_s = 0;
  double decode_s = 0;
  double augment_s = 0;

  int workers = 0;
  int slots = 0;  // batch slots in the arena now
  std::int64_t arena_bytes = 0;
};

}  // namespace stoke
