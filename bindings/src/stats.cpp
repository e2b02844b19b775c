// Loader.stats(): the C++ Stats as a dict, with the words of stoke/names.hpp.

#include "bindings.hpp"
#include "stoke/names.hpp"

namespace stoke::python {

nb::dict stats_dict(const Stats& s) {
  nb::dict d;
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["padded"] = s.padded;
  d["skipped"] = s.skipped;
  nb::dict reasons;
  for (const auto& [k, v] : s.skipped_by_reason) reasons[k.c_str()] = v;
  d["skipped_by_reason"] = reasons;
  nb::list sources, sources_epoch;  // a mixture's, per source (empty for one dataset)
  for (const std::int64_t n : s.source_samples) sources.append(n);
  for (const std::int64_t n : s.source_samples_epoch) sources_epoch.append(n);
  d["source_samples"] = sources;
  d["source_samples_epoch"] = sources_epoch;
  d["worker_restarts"] = s.worker_restarts;
  d["startup_s"] = s.startup_s;
  d["active_s"] = s.active_s;
  d["samples_per_s"] = s.samples_per_s;
  d["wait_s"] = s.wait_s;
  d["wait_fraction"] = s.wait_fraction;
  d["released"] = s.released;
  d["staging"] = staging_mode_name(s.staging);
  d["read_s"] = s.read_s;
  d["shard_cache"] = s.shard_cache;
  d["cache_bytes_fetched"] = s.cache_bytes_fetched;
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["cache_evictions"] = s.cache_evictions;
  d["cache_fetch_wait_s"] = s.cache_fetch_wait_s;
  d["relayout_cache"] = s.relayout_cache;
  d["relayout_hits"] = s.relayout_hits;
  d["relayout_stored"] = s.relayout_stored;
  d["decode_s"] = s.decode_s;
  d["device_decoded"] = s.device_decoded;
  d["device_decode_s"] = s.device_decode_s;
  d["device_decode_failed"] = s.device_decode_failed;
  d["worker_decoded_hybrid"] = s.worker_decoded_hybrid;
  d["worker_decoded_not_jpeg"] = s.worker_decoded_not_jpeg;
  d["worker_decoded_unsupported"] = s.worker_decoded_unsupported;
  d["worker_decoded_too_large"] = s.worker_decoded_too_large;
  d["augment_s"] = s.augment_s;
  d["compute_s"] = s.compute_s;
  d["window_batches"] = s.window_batches;
  d["window_wait_fraction"] = s.window_wait_fraction;
  d["window_samples_per_s"] = s.window_samples_per_s;
  d["demand_samples_per_s"] = s.demand_samples_per_s;
  d["worker_busy_fraction"] = s.worker_busy_fraction;
  d["worker_samples_per_s"] = s.worker_samples_per_s;
  d["gpu_monitor"] = s.gpu_monitor;
  nb::list gpus;
  for (const GpuActivity& g : s.gpus) {
    nb::dict e;
    e["device"] = g.device;
    e["samples"] = g.samples;
    e["mean_percent"] = g.mean_percent;
    e["idle_fraction"] = g.idle_fraction;
    e["busy_fraction"] = g.busy_fraction;
    e["bursts"] = g.bursts;
    e["burst_then_idle"] = g.burst_then_idle;
    gpus.append(e);
  }
  d["gpus"] = gpus;
  d["verdict"] = s.verdict;
  d["workers_auto"] = s.workers_auto;
  d["prefetch_auto"] = s.prefetch_auto;
  nb::list decisions;
  for (const TuneDecision& t : s.decisions) {
    nb::dict e;
    e["at_s"] = t.at_s;
    e["what"] = tune_target_name(t.what);
    e["from"] = t.from;
    e["to"] = t.to;
    e["reason"] = t.reason;
    decisions.append(e);
  }
  d["decisions"] = decisions;
  d["workers"] = s.workers;
  d["workers_starting"] = s.workers_starting;
  d["slots"] = s.slots;
  d["arena_bytes"] = s.arena_bytes;
  return d;
}

}  // namespace stoke::python
