#include "plan/mixture_plan.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "plan/sample_rng.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

namespace {

__extension__ typedef __int128 Wide;

// Whether u is in the cyclic interval [a, a + len) of 0..m-1 (REQUIRES: len <= m).
bool in_cycle(std::int64_t u, std::int64_t a, std::int64_t len, std::int64_t m) {
  return len > 0 && ((u - a) % m + m) % m < len;
}

// How many of 0..u-1 lie in the cyclic interval [a, a + len) of 0..m-1 (REQUIRES: 0 <= a < m,
// len <= m, 0 <= u <= m).
std::int64_t in_cycle_below(std::int64_t u, std::int64_t a, std::int64_t len, std::int64_t m) {
  if (len <= 0) return 0;
  if (a + len <= m) return std::clamp<std::int64_t>(u - a, 0, len);
  return std::clamp<std::int64_t>(u - a, 0, m - a) + std::min(u, a + len - m);
}

// A full global batch's per-source counts `c` (summing to D x the device batch) dealt to its
// D = W x G devices: device d (= rank x G + its device) gets floor or ceil of c_s / D of source
// s. The extras of each source are a run of the sequence that lists the devices device-major
// (device 0 of every rank, then device 1 of every rank, ...), the runs one after another from a
// seeded rotation: so each rank's devices, every W-th place of that sequence, get floor or
// ceil of e_s / W of them, and each rank holds floor or ceil of c_s / W of source s. The deal is
// a function of the devices over all ranks alone: W ranks x 1 device see what 1 rank x W
// devices see.
struct Deal {
  std::vector<std::int64_t> base, extras, start;
  std::int64_t units = 1, world = 1, devices = 1;

  Deal(std::span<const std::int64_t> c, std::int64_t world_, std::int64_t devices_,
       std::int64_t rotation)
      : base(c.size()),
        extras(c.size()),
        start(c.size()),
        units(world_ * devices_),
        world(world_),
        devices(devices_) {
    std::int64_t at = rotation % units;
    for (std::size_t s = 0; s < c.size(); ++s) {
      base[s] = c[s] / units;
      extras[s] = c[s] % units;
      start[s] = at;
      at = (at + extras[s]) % units;
    }
  }
  // Device d's place in the device-major sequence.
  std::int64_t place(std::int64_t d) const { return (d % devices) * world + d / devices; }
  std::int64_t count(std::int64_t d, std::size_t s) const {
    return base[s] + (in_cycle(place(d), start[s], extras[s], units) ? 1 : 0);
  }
  // Source s's samples dealt to the devices before d (in rank-major order: the batch's).
  std::int64_t before(std::int64_t d, std::size_t s) const {
    std::int64_t n = d * base[s];
    for (std::int64_t u = 0; u < d; ++u) n += in_cycle(place(u), start[s], extras[s], units);
    return n;
  }
};

}  // namespace

std::vector<std::int64_t> mixture_budgets(std::span<const BudgetRule> rules,
                                          std::int64_t epoch_samples) {
  const auto named = [](std::size_t s) { return "mixture source " + std::to_string(s); };
  std::vector<std::int64_t> budget(rules.size(), 0);
  std::int64_t fixed = 0, sizes = 0;
  double weights = 0;
  for (std::size_t s = 0; s < rules.size(); ++s) {
    const BudgetRule& r = rules[s];
    if (r.weight < 0 || r.samples < 0 || r.repeat < 0 || !std::isfinite(r.weight) ||
        !std::isfinite(r.repeat))
      throw ConfigError(named(s) + ": weight, samples and repeat must not be negative");
    if ((r.weight > 0) + (r.samples > 0) + (r.repeat > 0) > 1)
      throw ConfigError(named(s) + ": give one of weight, samples and repeat, not several");
    sizes += r.size;
    if (r.weight > 0) {
      weights += r.weight;
      continue;
    }
    budget[s] = r.samples > 0  ? r.samples
                : r.repeat > 0 ? std::llround(r.repeat * static_cast<double>(r.size))
                               : r.size;
    if (budget[s] < 1)
      throw ConfigError(named(s) + ": repeat " + std::to_string(r.repeat) + " of its " +
                        std::to_string(r.size) + " samples is no sample an epoch");
    fixed += budget[s];
  }
  if (epoch_samples < 0) throw ConfigError("epoch_samples must not be negative");
  if (weights == 0) {
    if (epoch_samples != 0 && epoch_samples != fixed)
      throw ConfigError("epoch_samples " + std::to_string(epoch_samples) +
                        " is not what the sources' samples and repeats make, " +
                        std::to_string(fixed) + ": give some sources a weight, or leave it 0");
    return budget;
  }
  const std::int64_t epoch = epoch_samples > 0 ? epoch_samples : sizes;
  const std::int64_t left = epoch - fixed;
  if (left <= 0)
    throw ConfigError("the sources given samples or repeat take " + std::to_string(fixed) +
                      " samples of an epoch of " + std::to_string(epoch) +
                      ", leaving none for the weighted ones: set epoch_samples larger");
  // Largest remainder: floors, then one more to the largest fractional parts (the first among
  // equals).
  std::vector<std::pair<double, std::size_t>> fractions;
  std::int64_t given = 0;
  for (std::size_t s = 0; s < rules.size(); ++s) {
    if (rules[s].weight <= 0) continue;
    const double exact = static_cast<double>(left) * rules[s].weight / weights;
    budget[s] = static_cast<std::int64_t>(std::floor(exact));
    given += budget[s];
    fractions.emplace_back(exact - std::floor(exact), s);
  }
  std::stable_sort(fractions.begin(), fractions.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < left && k < fractions.size(); ++k, ++given)
    budget[fractions[k].second] += 1;
  for (std::size_t s = 0; s < rules.size(); ++s)
    if (rules[s].weight > 0 && budget[s] < 1)
      throw ConfigError(named(s) + ": weight " + std::to_string(rules[s].weight) + " of the " +
                        std::to_string(left) +
                        " samples the weighted sources share is no sample an epoch");
  return budget;
}

std::uint64_t mixture_source_seed(std::uint64_t seed, std::size_t s) {
  return splitmix64(seed ^ splitmix64(kSourceStream + s));
}

void validate_mixture(const MixtureConfig& c) {
  if (c.sources.empty()) throw ConfigError("a mixture needs at least one source");
  if (c.repeats < 1) throw ConfigError("a mixture's repeats must be 1 or more");
  if (c.batch < 1 || c.devices < 1 || c.batch % c.devices != 0 || c.world < 1 || c.rank < 0 ||
      c.rank >= c.world)
    throw ConfigError("a mixture's batch must be a positive multiple of its devices, on ranks 0.." +
                      std::to_string(c.world - 1));
  std::int64_t total = 0;
  for (std::size_t s = 0; s < c.sources.size(); ++s) {
    const MixSource& m = c.sources[s];
    if (m.samples < 1) throw ConfigError("mixture source " + std::to_string(s) + " has no samples");
    if (m.budget < 1 || m.budget > (std::int64_t{1} << 40))
      throw ConfigError(
          "mixture source " + std::to_string(s) + ": its samples an epoch must be 1.." +
          std::to_string(std::int64_t{1} << 40) + ", got " + std::to_string(m.budget));
    total += m.budget;
  }
  const std::int64_t global = std::int64_t{c.batch} * c.world;
  if (c.last_batch == LastBatch::kDrop && total < global)
    throw ConfigError("the mixture's epoch holds " + std::to_string(total) +
                      " samples, less than one global batch of " + std::to_string(global) +
                      " under last_batch=drop: make the budgets larger or the batch smaller");
  if (c.resume_epoch >= 0) {
    if (c.resume_consumed.size() != c.sources.size())
      throw ConfigError("the saved state counts " + std::to_string(c.resume_consumed.size()) +
                        " mixture sources, this mixture has " + std::to_string(c.sources.size()));
    for (std::size_t s = 0; s < c.sources.size(); ++s)
      if (c.resume_consumed[s] < 0 || c.resume_consumed[s] > c.sources[s].budget)
        throw ConfigError("the saved state has " + std::to_string(c.resume_consumed[s]) +
                          " samples of mixture source " + std::to_string(s) +
                          " delivered, outside its epoch's 0.." +
                          std::to_string(c.sources[s].budget));
  }
}

MixturePlan::Allocation MixturePlan::allocate(std::span<const std::int64_t> y, std::int64_t g,
                                              std::uint64_t seed, std::int64_t epoch,
                                              std::int64_t salt) {
  const std::size_t n = y.size();
  const std::int64_t e = std::accumulate(y.begin(), y.end(), std::int64_t{0});
  Allocation a;
  a.full = e / g;
  a.tail = e % g;
  a.base.assign(n, 0);
  a.extras.assign(n, 0);
  a.start.assign(n, 0);
  a.rest.assign(n, 0);
  // The sources in a seeded order of the epoch: among equal remainders, and along the batches.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  SampleRng rng(seed, kSourceStream, epoch, salt);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::int64_t r = g;
  for (std::size_t s = 0; s < n; ++s) {
    a.base[s] = static_cast<std::int64_t>(Wide{g} * y[s] / e);
    r -= a.base[s];
  }
  if (a.full > 0) {
    std::vector<Wide> fraction(n);
    std::int64_t owed = a.full * r;
    for (std::size_t s = 0; s < n; ++s) {
      const Wide x = Wide{a.full} * (Wide{g} * y[s] % e);
      a.extras[s] = static_cast<std::int64_t>(x / e);
      fraction[s] = x % e;
      owed -= a.extras[s];
    }
    std::vector<std::size_t> by_fraction = order;
    std::stable_sort(by_fraction.begin(), by_fraction.end(),
                     [&](std::size_t p, std::size_t q) { return fraction[p] > fraction[q]; });
    for (std::int64_t k = 0; k < owed; ++k) a.extras[by_fraction[static_cast<std::size_t>(k)]] += 1;
    std::int64_t at = 0;
    for (std::size_t s : order) {
      a.start[s] = at % a.full;
      at += a.extras[s];
    }
  }
  for (std::size_t s = 0; s < n; ++s) a.rest[s] = y[s] - a.full * a.base[s] - a.extras[s];
  return a;
}

void MixturePlan::counts_of(const Allocation& a, std::int64_t j, std::span<std::int64_t> out) {
  for (std::size_t s = 0; s < out.size(); ++s)
    out[s] =
        j < a.full ? a.base[s] + (in_cycle(j, a.start[s], a.extras[s], a.full) ? 1 : 0) : a.rest[s];
}

void MixturePlan::before(const Allocation& a, std::int64_t j, std::span<std::int64_t> out) {
  for (std::size_t s = 0; s < out.size(); ++s) {
    const std::int64_t full = std::min(j, a.full);
    out[s] =
        full * a.base[s] + (a.full > 0 ? in_cycle_below(full, a.start[s], a.extras[s], a.full) : 0);
    if (j > a.full) out[s] += a.rest[s];
  }
}

MixturePlan::MixturePlan(const MixtureConfig& config) : config_(config) {
  validate_mixture(config_);
  global_ = std::int64_t{config_.batch} * config_.world;
  for (std::size_t s = 0; s < config_.sources.size(); ++s) {
    const MixSource& m = config_.sources[s];
    budgets_.push_back(m.budget);
    epoch_samples_ += m.budget;
    PlanConfig p;
    p.samples = m.samples;
    p.batch = 1;
    p.seed = mixture_source_seed(config_.seed, s);
    p.shuffle = config_.shuffle;
    p.shard_starts = m.shard_starts;
    p.shuffle_window = m.shuffle_window;
    p.permuted_from = config_.permuted_from;
    p.order_folder = config_.order_folder;
    orders_.push_back(std::make_unique<EpochPlan>(p));
  }
  const std::int64_t full = epoch_samples_ / global_;
  batches_ = full + (config_.last_batch == LastBatch::kPad && epoch_samples_ % global_ != 0);
  if (config_.resume_epoch < 0) return;
  const std::vector<std::int64_t>& consumed = config_.resume_consumed;
  const std::int64_t p = std::accumulate(consumed.begin(), consumed.end(), std::int64_t{0});
  if (p == epoch_samples_) {
    resume_first_ = batches_;
    return;
  }
  if (p % global_ == 0) {
    // The plain epoch, when it had delivered just these before batch p / G.
    const Allocation plain = allocate(budgets_, global_, config_.seed, config_.resume_epoch, 0);
    std::vector<std::int64_t> at(budgets_.size());
    before(plain, p / global_, at);
    if (at == consumed) {
      resume_first_ = p / global_;
      return;
    }
  }
  std::vector<std::int64_t> left(budgets_.size());
  for (std::size_t s = 0; s < left.size(); ++s) {
    left[s] = budgets_[s] - consumed[s];
    resume_stream_.push_back(config_.resume_epoch * budgets_[s] + consumed[s]);
  }
  reallocated_ = true;
  resumed_ = allocate(left, global_, config_.seed, config_.resume_epoch, p + 1);
  const std::int64_t rest =
      resumed_.full + (config_.last_batch == LastBatch::kPad && resumed_.tail > 0);
  resume_first_ = batches_ - rest;
}

MixturePlan::~MixturePlan() = default;

bool MixturePlan::clear_resume() {
  if (config_.resume_epoch < 0) return false;
  config_.resume_epoch = -1;
  config_.resume_consumed.clear();
  reallocated_ = false;
  resume_first_ = 0;
  return true;
}

MixturePlan::Where MixturePlan::where(std::int64_t epoch, std::int64_t index) const {
  Where w;
  if (reallocated_ && epoch == config_.resume_epoch && index >= resume_first_) {
    w.allocation = resumed_;
    w.j = index - resume_first_;
    w.stream = resume_stream_;
    return w;
  }
  w.allocation = allocate(budgets_, global_, config_.seed, epoch, 0);
  w.j = index;
  for (std::int64_t b : budgets_) w.stream.push_back(epoch * b);
  return w;
}

std::int64_t MixturePlan::position(std::int64_t epoch, std::int64_t index) const {
  if (index >= batches_) return epoch_samples_;
  if (reallocated_ && epoch == config_.resume_epoch && index >= resume_first_) {
    std::int64_t p = 0;
    for (std::size_t s = 0; s < budgets_.size(); ++s) p += config_.resume_consumed[s];
    return std::min(epoch_samples_, p + (index - resume_first_) * global_);
  }
  return std::min(epoch_samples_, index * global_);
}

void MixturePlan::batch_counts(std::int64_t epoch, std::int64_t index,
                               std::span<std::int64_t> counts) const {
  const Where w = where(epoch, index);
  counts_of(w.allocation, w.j, counts);
}

void MixturePlan::stream_ranges(std::int64_t epoch, std::int64_t index,
                                std::span<std::int64_t> begin,
                                std::span<std::int64_t> count) const {
  const Where w = where(epoch, index);
  before(w.allocation, w.j, begin);
  counts_of(w.allocation, w.j, count);
  for (std::size_t s = 0; s < begin.size(); ++s) begin[s] += w.stream[s];
}

void MixturePlan::consumed_before(std::int64_t epoch, std::int64_t index,
                                  std::span<std::int64_t> out) const {
  if (index >= batches_) {  // the epoch is done (under kDrop its tail is left out, not owed)
    std::copy(budgets_.begin(), budgets_.end(), out.begin());
    return;
  }
  const Where w = where(epoch, index);
  before(w.allocation, w.j, out);
  for (std::size_t s = 0; s < out.size(); ++s) out[s] += w.stream[s] - epoch * budgets_[s];
}

std::int64_t MixturePlan::stream_sample(std::size_t s, std::int64_t t) {
  const MixSource& m = config_.sources[s];
  const std::int64_t u = t / config_.repeats;
  return m.first_id + orders_[s]->sample_at(u / m.samples, u % m.samples);
}

std::int64_t MixturePlan::batch(std::int64_t epoch, std::int64_t index, std::span<std::int64_t> ids,
                                std::span<std::uint8_t> valid, std::span<std::int32_t> sources) {
  const Where w = where(epoch, index);
  const Allocation& a = w.allocation;
  const std::size_t n = budgets_.size();
  std::vector<std::int64_t> count(n), cum(n);
  counts_of(a, w.j, count);
  before(a, w.j, cum);
  const std::int64_t b = config_.batch;
  if (w.j < a.full) {
    // A full batch: its devices, over all ranks, dealt each source's share.
    SampleRng rng(config_.seed, kSourceStream, epoch, -1 - index);
    const std::int64_t units = std::int64_t{config_.world} * config_.devices;
    const Deal deal(count, config_.world, config_.devices,
                    static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(units))));
    std::size_t slot = 0;
    for (std::int64_t g = 0; g < config_.devices; ++g) {
      const std::int64_t d = std::int64_t{config_.rank} * config_.devices + g;
      for (std::size_t s = 0; s < n; ++s) {
        // Without repeats a device reads a run of the source's entries; with them, every
        // units-th entry from its place on, so that consecutive entries (a sample's copies) go
        // to consecutive places: other devices.
        const bool strided = config_.repeats > 1;
        const std::int64_t first =
            w.stream[s] + cum[s] +
            (strided ? (deal.place(d) - deal.start[s] + units) % units : deal.before(d, s));
        const std::int64_t step = strided ? units : 1;
        for (std::int64_t q = 0; q < deal.count(d, s); ++q, ++slot) {
          ids[slot] = stream_sample(s, first + q * step);
          valid[slot] = 1;
          sources[slot] = static_cast<std::int32_t>(s);
        }
      }
    }
  } else {
    // The last batch: its T samples by source at its first positions, then padding (valid 0):
    // those samples again, in order.
    const std::int64_t t = a.tail;
    for (std::int64_t k = 0; k < b; ++k) {
      const std::int64_t q = std::int64_t{config_.rank} * b + k;
      std::int64_t at = q < t ? q : (q - t) % t;
      std::size_t s = 0;
      while (at >= count[s]) at -= count[s++];
      const auto slot = static_cast<std::size_t>(k);
      ids[slot] = stream_sample(s, w.stream[s] + cum[s] + at);
      valid[slot] = q < t ? 1 : 0;
      sources[slot] = static_cast<std::int32_t>(s);
    }
  }
  return first_position(epoch, index);
}

}  // namespace stoke::detail
