#include "plan/epoch_plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "data/cache_folder.hpp"
#include "plan/sample_rng.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

// L (epoch_plan.hpp): RASampler's samples per device, times the devices.
std::int64_t repeat_positions(const PlanConfig& c) {
  const std::int64_t d = std::int64_t{c.devices} * c.world;
  return c.samples / 256 * 256 / d * d;
}

}  // namespace

void validate_plan(const PlanConfig& c) {
  if (c.devices <= 0)
    throw ConfigError("device count must be at least 1, got " + std::to_string(c.devices));
  if (c.world <= 0)
    throw ConfigError("world size must be at least 1, got " + std::to_string(c.world));
  if (c.rank < 0 || c.rank >= c.world)
    throw ConfigError("rank " + std::to_string(c.rank) + " is outside world size " +
                      std::to_string(c.world) + "; ranks are 0.." + std::to_string(c.world - 1));
  if (c.batch <= 0 || c.batch % c.devices != 0) {
    const int below = c.batch / c.devices * c.devices;
    const int above = below + c.devices;
    std::string fix = below > 0 ? "use " + std::to_string(below) + " or " + std::to_string(above)
                                : "use " + std::to_string(above) + " or a multiple of it";
    throw ConfigError("batch " + std::to_string(c.batch) + " is not a multiple of " +
                      std::to_string(c.devices) + (c.devices == 1 ? " device" : " devices") + "; " +
                      fix);
  }
  if (c.samples <= 0) throw ConfigError("the dataset holds no samples");
  if (c.repeats > 1 && repeat_positions(c) == 0)
    throw ConfigError("repeats " + std::to_string(c.repeats) +
                      " keeps floor(floor(N / 256) * 256 / " +
                      std::to_string(std::int64_t{c.devices} * c.world) +
                      " devices) samples per device per epoch, as torchvision's RASampler does, "
                      "and the dataset's " +
                      std::to_string(c.samples) + " samples give none; use repeats 1");
  const std::int64_t global = std::int64_t{c.batch} * c.world;
  const std::int64_t positions = c.repeats > 1 ? repeat_positions(c) : c.samples;
  if (c.last_batch == LastBatch::kDrop && positions < global)
    throw ConfigError((c.repeats > 1 ? "the epoch's " : "the dataset's ") +
                      std::to_string(positions) + (c.repeats > 1 ? " positions" : " samples") +
                      " fill no global batch of " + std::to_string(global) + " (batch " +
                      std::to_string(c.batch) + " x world " + std::to_string(c.world) +
                      ") with last_batch=drop; use last_batch=pad or a batch of at most " +
                      std::to_string(positions / c.world / c.devices * c.devices));
}

EpochPlan::EpochPlan(const PlanConfig& config) : config_(config) {
  validate_plan(config_);
  const std::int64_t global = std::int64_t{config_.batch} * config_.world;
  const bool pad = config_.last_batch == LastBatch::kPad;
  const auto batches_in = [&](std::int64_t samples) {
    return pad ? (samples + global - 1) / global : samples / global;
  };
  positions_ = config_.repeats > 1 ? repeat_positions(config_) : config_.samples;
  batches_ = batches_in(positions_);
  if (config_.resume_epoch >= 0) {
    const std::int64_t p = config_.resume_position;
    resume_first_ = batches_ - batches_in(positions_ - p);
    resume_offset_ = p - resume_first_ * global;
  }
}

bool EpochPlan::clear_resume() {
  const bool had = config_.resume_epoch >= 0;
  config_.resume_epoch = -1;
  config_.resume_position = 0;
  resume_first_ = resume_offset_ = 0;
  return had;
}

std::int64_t EpochPlan::position(std::int64_t epoch, std::int64_t index) const {
  if (index >= batches_) return positions_;
  const std::int64_t plain = index * config_.batch * config_.world;
  return epoch == config_.resume_epoch && index >= resume_first_ ? plain + resume_offset_ : plain;
}

namespace {

// Fisher-Yates with the portable generator: the same order on every machine.
template <class It>
void shuffle_range(It begin, It end, SampleRng& rng) {
  const auto n = static_cast<std::size_t>(end - begin);
  for (std::size_t i = n; i > 1; --i) std::swap(begin[i - 1], begin[rng.below(i)]);
}

}  // namespace

std::vector<ShardWindow> EpochPlan::shard_windows(std::int64_t epoch) const {
  const auto& starts = config_.shard_starts;
  std::vector<ShardWindow> windows;
  if (starts.size() < 2) return windows;
  const std::size_t shards = starts.size() - 1;
  const auto window = static_cast<std::size_t>(std::max(config_.shuffle_window, 0));
  if (!config_.shuffle) {
    for (std::size_t s = 0; s < shards; ++s) windows.push_back({starts[s], starts[s + 1], {s}});
    return windows;
  }
  std::vector<std::size_t> shard_order(shards);
  std::iota(shard_order.begin(), shard_order.end(), std::size_t{0});
  if (window == 0 || window >= shards) {
    windows.push_back({0, config_.samples, std::move(shard_order)});
    return windows;
  }
  SampleRng shard_rng(config_.seed, kShardStream, epoch, 0);
  shuffle_range(shard_order.begin(), shard_order.end(), shard_rng);
  std::int64_t position = 0;
  for (std::size_t first = 0; first < shards; first += window) {
    ShardWindow w;
    w.begin = position;
    for (std::size_t k = first; k < std::min(first + window, shards); ++k) {
      w.shards.push_back(shard_order[k]);
      position += starts[shard_order[k] + 1] - starts[shard_order[k]];
    }
    w.end = position;
    windows.push_back(std::move(w));
  }
  return windows;
}

std::vector<std::int64_t> EpochPlan::order(std::int64_t epoch) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(config_.samples));
  if (!config_.shuffle) {
    std::iota(out.begin(), out.end(), std::int64_t{0});
    return out;
  }
  const std::span<const std::uint32_t> a = array_order(epoch);
  std::copy(a.begin(), a.end(), out.begin());
  return out;
}

// The same Fisher-Yates swaps on 32-bit entries as on 64-bit ones: the same permutation, in half
// the memory (an array order has fewer than 2^32 entries: permuted() takes over before).
SampleRng EpochPlan::window_shuffle(std::int64_t epoch, std::size_t k, std::size_t windows) const {
  // One stream for a full permutation; window k (the shards of order positions k*K .. k*K+K-1)
  // has its own.
  const std::int64_t stream =
      windows <= 1 ? 0 : 1 + static_cast<std::int64_t>(k) * config_.shuffle_window;
  return SampleRng(config_.seed, kShuffleStream, epoch, stream);
}

bool EpochPlan::order_shared(std::int64_t epoch) {
  if (!config_.shuffle || permuted()) return false;
  array_order(epoch);
  for (int i = 0; i < 2; ++i) {
    if (cached_epoch_[i] == epoch) return cached_order_[i].shared();
  }
  return false;
}

std::string EpochPlan::order_name(std::int64_t epoch) const {
  std::string what = "stoke order ";
  for (const std::int64_t v :
       {std::int64_t{kOrderFileVersion}, config_.samples, static_cast<std::int64_t>(config_.seed),
        epoch, std::int64_t{config_.shuffle_window}}) {
    what += std::to_string(v);
    what += ' ';
  }
  what += "shard_starts";
  for (const std::int64_t s : config_.shard_starts) {
    what += ' ';
    what += std::to_string(s);
  }
  return cache_key(what);
}

std::span<const std::uint32_t> EpochPlan::array_order(std::int64_t epoch) {
  for (int i = 0; i < 2; ++i) {
    if (cached_epoch_[i] == epoch) return cached_order_[i].entries();
  }
  const int slot = next_cache_;
  next_cache_ ^= 1;
  cached_epoch_[slot] = -1;
  cached_order_[slot] = OrderBuffer();  // the old epoch's memory goes before the new one's
  OrderBuffer buffer(static_cast<std::size_t>(config_.samples));
  const std::span<std::uint32_t> order = buffer.writable();
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  const std::vector<ShardWindow> windows = shard_windows(epoch);
  if (windows.size() <= 1) {
    SampleRng rng = window_shuffle(epoch, 0, windows.size());
    shuffle_range(order.begin(), order.end(), rng);
  } else {
    const auto& starts = config_.shard_starts;
    auto out = order.begin();
    for (std::size_t k = 0; k < windows.size(); ++k) {
      const auto window_begin = out;
      for (std::size_t s : windows[k].shards) {
        const std::int64_t count = starts[s + 1] - starts[s];
        std::iota(out, out + count, static_cast<std::uint32_t>(starts[s]));
        out += count;
      }
      SampleRng rng = window_shuffle(epoch, k, windows.size());
      shuffle_range(window_begin, out, rng);
    }
  }
  if (!config_.order_folder.empty()) {
    buffer.share(config_.order_folder, order_name(epoch));
    // Two epochs back: no rank of the machine reads it again (each keeps the last two).
    if (epoch >= 2) remove_order_file(config_.order_folder, order_name(epoch - 2));
  }
  cached_order_[slot] = std::move(buffer);
  cached_epoch_[slot] = epoch;
  return cached_order_[slot].entries();
}

std::array<EpochPlan::OrderSpan, 2> EpochPlan::order_spans(std::int64_t epoch,
                                                           std::int64_t index) const {
  if (config_.repeats <= 1) return {{{first_position(epoch, index), config_.batch}, {}}};
  const std::int64_t k = config_.repeats;
  const std::int64_t l = positions_;
  const std::int64_t s = position(epoch, index);
  const std::int64_t end = s + std::int64_t{config_.batch} * config_.world;  // past the last
  // R[q] = order[q / k] for q < L; positions past L are R[q - L], ...
  const auto entries = [k](std::int64_t from, std::int64_t to) {  // R positions [from, to)
    return OrderSpan{from / k, (to - 1) / k - from / k + 1};
  };
  if (end <= l) return {{entries(s, end), {}}};
  return {{entries(s, l), entries(0, std::min(end - l, l))}};
}

const EpochPlan::PermutedEpoch& EpochPlan::permuted_epoch(std::int64_t epoch) {
  for (const PermutedEpoch& e : permuted_) {
    if (e.epoch == epoch) return e;
  }
  PermutedEpoch& e = permuted_[next_permuted_];
  next_permuted_ ^= 1;
  e = PermutedEpoch{};
  e.epoch = epoch;
  e.windows = shard_windows(epoch);
  if (e.windows.empty()) e.windows.push_back({0, config_.samples, {}});  // not shards
  const auto& starts = config_.shard_starts;
  for (std::size_t k = 0; k < e.windows.size(); ++k) {
    const ShardWindow& w = e.windows[k];
    SampleRng rng = window_shuffle(epoch, k, e.windows.size());
    e.shuffles.emplace_back(static_cast<std::uint64_t>(std::max<std::int64_t>(w.end - w.begin, 1)),
                            rng.next());
    e.first_shard.push_back(e.shard_offsets.size());
    std::int64_t at = 0;
    for (std::size_t shard : w.shards) {
      e.shard_offsets.push_back(at);
      at += starts[shard + 1] - starts[shard];
    }
    e.shard_offsets.push_back(at);
  }
  return e;
}

std::int64_t EpochPlan::sample_at(std::int64_t epoch, std::int64_t p) {
  if (!config_.shuffle) return p;  // the identity, shards or not
  if (!permuted()) return array_order(epoch)[static_cast<std::size_t>(p)];
  const PermutedEpoch& e = permuted_epoch(epoch);
  const auto w = std::upper_bound(e.windows.begin(), e.windows.end(), p,
                                  [](std::int64_t v, const ShardWindow& x) { return v < x.end; });
  const auto k = static_cast<std::size_t>(w - e.windows.begin());
  const auto j = static_cast<std::int64_t>(e.shuffles[k](static_cast<std::uint64_t>(p - w->begin)));
  if (w->shards.empty()) return w->begin + j;
  // The shard of the window that holds its j-th sample (empty shards have no room).
  const auto offsets = e.shard_offsets.begin() + static_cast<std::ptrdiff_t>(e.first_shard[k]);
  const auto in =
      std::upper_bound(offsets, offsets + static_cast<std::ptrdiff_t>(w->shards.size()), j) - 1;
  return config_.shard_starts[w->shards[static_cast<std::size_t>(in - offsets)]] + (j - *in);
}

std::int64_t EpochPlan::batch(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> ids,
                              std::span<std::uint8_t> valid) {
  const bool by_array = config_.shuffle && !permuted();
  const std::span<const std::uint32_t> array =
      by_array ? array_order(epoch) : std::span<const std::uint32_t>();
  const auto sample = [&](std::int64_t p) -> std::int64_t {
    return by_array ? array[static_cast<std::size_t>(p)] : sample_at(epoch, p);
  };
  const std::int64_t n = config_.samples;
  const std::int64_t first = first_position(epoch, index);
  if (config_.repeats <= 1) {
    for (int j = 0; j < config_.batch; ++j) {
      const std::int64_t p = first + j;
      ids[j] = sample(p % n);
      valid[j] = p < n ? 1 : 0;
    }
    return first;
  }
  // RASampler's dealing (above): sample i of device g of rank r is R[s + d + i * D].
  const std::int64_t k = config_.repeats;
  const std::int64_t l = positions_;
  const std::int64_t s = position(epoch, index);
  const int per_device = config_.batch / config_.devices;
  const std::int64_t d_all = std::int64_t{config_.devices} * config_.world;
  for (int j = 0; j < config_.batch; ++j) {
    const std::int64_t d = std::int64_t{config_.rank} * config_.devices + j / per_device;
    const std::int64_t q = s + d + (j % per_device) * d_all;
    ids[j] = sample((q % l) / k);
    valid[j] = q < l ? 1 : 0;
  }
  return first;
}

}  // namespace stoke::detail
