#include "data/shard_counts.hpp"

#include <filesystem>
#include <fstream>
#include <istream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>

#include "common/text.hpp"
#include "data/shard_list.hpp"
#include "data/tar_index.hpp"
#include "remote/remote.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {
namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 16;
// Members before the first that says which form the file is ("name", "base_path": strings).
constexpr int kMaxUndecidedMembers = 8;

// The SAX handler: the form is decided by the first telling member; then every shard is
// checked as it is read.
class CountsStream final : public nlohmann::json_sax<json> {
 public:
  enum class State { kUndecided, kWids, kSizes, kOther };

  CountsStream(std::string base, std::string source)
      : base_(std::move(base)), source_(std::move(source)) {}

  State state() const { return state_; }
  ShardCounts take() {
    if (state_ == State::kWids && !seen_shardlist_) fail("", "no \"shardlist\"");
    if (counts_.shards.empty()) fail("", "names no shards");
    counts_.form = state_ == State::kWids ? ShardCounts::Form::kWids : ShardCounts::Form::kSizes;
    return std::move(counts_);
  }

  bool null() override { return scalar(std::nullopt); }
  bool boolean(bool) override { return scalar(std::nullopt); }
  bool number_integer(std::int64_t v) override {
    return v < 0 ? negative() : scalar(static_cast<std::uint64_t>(v));
  }
  bool number_unsigned(std::uint64_t v) override { return scalar(v); }
  bool number_float(double, const std::string&) override { return scalar(std::nullopt); }
  bool string(std::string& s) override {
    if (in_entry() && field_ == Field::kUrl) {
      entry_.name = std::move(s);
      has_url_ = true;
      return true;
    }
    return scalar(std::nullopt);
  }
  bool binary(json::binary_t&) override { return scalar(std::nullopt); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(std::string& k) override {
    if (depth_ == 1) {
      member_ = std::move(k);
      if (state_ == State::kUndecided &&
          (member_ == "__kind__" || member_ == "wids_version" || member_ == "shardlist"))
        state_ = State::kWids;
    } else if (in_entry()) {
      field_ = k == "url"        ? Field::kUrl
               : k == "nsamples" ? Field::kSamples
               : k == "filesize" ? Field::kBytes
                                 : Field::kOther;
    }
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // (nlohmann's message names the byte and what it expected)
    throw ConfigError(source_ + ": not valid JSON at byte " + std::to_string(byte) + ": " +
                      e.what());
  }

 private:
  enum class Field { kOther, kUrl, kSamples, kBytes };

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ConfigError(source_ + ": " + (where.empty() ? "" : where + ": ") + what +
                      (state_ == State::kSizes
                           ? " (expected a sizes.json: {\"SHARD\": SAMPLES, ...})"
                           : " (expected a wids shard index: {\"shardlist\": [{\"url\": "
                             "SHARD, \"nsamples\": SAMPLES}, ...]})"));
  }
  std::string entry_where() const { return "shardlist[" + std::to_string(entries_) + "]"; }
  bool in_shardlist() const { return state_ == State::kWids && member_ == "shardlist"; }
  bool in_entry() const { return in_shardlist() && depth_ == 3; }

  bool open(bool array) {
    if (depth_ >= kMaxDepth)
      fail("", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (depth_ == 0 && array) return stop();  // (an index is an object)
    if (depth_ == 1) {
      if (state_ == State::kUndecided) return stop();  // "info": {...}, "images": [...]
      if (state_ == State::kSizes) fail(printable_key(), "expected a sample count");
      if (member_ == "shardlist") {
        if (std::exchange(seen_shardlist_, true)) fail("shardlist", "appears twice");
        if (!array) fail("shardlist", "is not a list");
      }
    } else if (depth_ == 2 && in_shardlist()) {
      if (array) fail(entry_where(), "is not an object");
      entry_ = ShardCount{};
      has_url_ = has_samples_ = false;
      field_ = Field::kOther;
    }
    ++depth_;
    return true;
  }

  bool close() {
    --depth_;
    if (depth_ == 2 && in_shardlist()) {
      if (!has_url_) fail(entry_where(), "has no \"url\"");
      if (!has_samples_) fail(entry_where(), "has no \"nsamples\"");
      add(std::move(entry_), entry_where());
      ++entries_;
    }
    field_ = Field::kOther;
    return true;
  }

  // A number, string (other than a url), true, false or null; a count when `v` holds one.
  bool scalar(std::optional<std::uint64_t> v) {
    if (depth_ == 1) {
      if (state_ == State::kUndecided) {
        // A sizes.json's first member is a shard's count: "train-000000.tar": 5000. (Another
        // number first, such as a COCO file's "version": 1, decides nothing.)
        if (!v || !names_a_tar(member_)) return ++undecided_ <= kMaxUndecidedMembers || stop();
        state_ = State::kSizes;
      }
      if (state_ == State::kSizes) {
        if (!v) fail(printable_key(), "expected a sample count");
        add(ShardCount{member_, *v, 0}, printable_key());
      }
      return true;
    }
    if (!in_entry()) {
      if (in_shardlist() && depth_ == 2) fail(entry_where(), "is not an object");
      return true;  // (inside a member the index does not use)
    }
    if (field_ == Field::kUrl) fail(entry_where() + ".url", "is not a string");
    if (field_ == Field::kSamples) {
      if (!v) fail(entry_where() + ".nsamples", "is not a whole number");
      entry_.samples = *v;
      has_samples_ = true;
    } else if (field_ == Field::kBytes) {
      if (!v) fail(entry_where() + ".filesize", "is not a whole number");
      entry_.bytes = *v;
    }
    return true;
  }

  bool negative() {
    if (depth_ == 1 && state_ != State::kWids) {
      if (state_ == State::kUndecided) return stop();
      fail(printable_key(), "a negative sample count");
    }
    if (in_entry() && (field_ == Field::kSamples || field_ == Field::kBytes))
      fail(entry_where(), "a negative number");
    return true;
  }

  std::string printable_key() const {
    return "\"" + (member_.size() > 200 ? member_.substr(0, 200) + "..." : member_) + "\"";
  }

  void add(ShardCount s, const std::string& where) {
    if (s.name.empty()) fail(where, "an empty shard name");
    if (s.name.size() > kMaxShardNameBytes)
      fail(where, "a shard name over " + std::to_string(kMaxShardNameBytes) + " bytes");
    if (s.samples > kMaxShardSamples)
      fail(where, std::to_string(s.samples) + " samples, more than one shard may hold (" +
                      std::to_string(kMaxShardSamples) + ")");
    if (counts_.shards.size() >= kMaxShards)
      fail(where, "more than " + std::to_string(kMaxShards) + " shards");
    total_ += s.samples;
    if (total_ > kMaxDatasetSamples)
      fail(where, "more than " + std::to_string(kMaxDatasetSamples) + " samples in all");
    if (!is_url(s.name) && s.name.front() != '/' && !base_.empty())
      s.name = is_url(base_) ? base_ + "/" + s.name  // (a URL's "//" must stay as it is)
                             : (fs::path(base_) / s.name).lexically_normal().string();
    counts_.shards.push_back(std::move(s));
  }

  static bool names_a_tar(const std::string& name) {
    return name.size() > 4 &&
           same_extension(std::string_view(name).substr(name.size() - 4), ".tar");
  }

  bool stop() {
    state_ = State::kOther;
    return false;
  }

  std::string base_, source_;
  State state_ = State::kUndecided;
  int depth_ = 0;
  int undecided_ = 0;
  std::string member_;  // the top-level member being read
  bool seen_shardlist_ = false;
  std::size_t entries_ = 0;
  ShardCount entry_;
  bool has_url_ = false, has_samples_ = false;
  Field field_ = Field::kOther;
  std::uint64_t total_ = 0;
  ShardCounts counts_;
};

// Reads at most `cap` bytes of another stream buffer; one more is a ConfigError (so a token of
// any length in any file costs at most `cap` bytes).
class CappedInput final : public std::streambuf {
 public:
  CappedInput(std::streambuf* source, std::uint64_t cap, const std::string& name)
      : source_(source), left_(cap), cap_(cap), name_(name) {}

 private:
  int_type underflow() override {
    const std::streamsize n = source_->sgetn(buffer_, sizeof buffer_);
    if (n <= 0) return traits_type::eof();
    if (static_cast<std::uint64_t>(n) > left_)
      throw ConfigError(name_ + ": a shard index over " + std::to_string(cap_ >> 20) + " MiB");
    left_ -= static_cast<std::uint64_t>(n);
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(buffer_[0]);
  }
  std::streambuf* source_;
  std::uint64_t left_, cap_;
  const std::string& name_;
  char buffer_[1 << 16];
};

}  // namespace

std::optional<ShardCounts> parse_shard_counts(std::istream& in, const std::string& base,
                                              const std::string& source) {
  CountsStream stream(base, source);
  CappedInput capped(in.rdbuf(), kMaxShardListBytes, source);
  std::istream limited(&capped);
  json::sax_parse(limited, &stream);
  if (stream.state() == CountsStream::State::kOther ||
      stream.state() == CountsStream::State::kUndecided)
    return std::nullopt;
  return stream.take();
}

std::optional<ShardCounts> read_shard_counts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot be read");
  return parse_shard_counts(in, fs::absolute(path).parent_path().string(), path);
}

std::optional<ShardCounts> fetch_shard_counts(const std::string& url, const RemotePolicy& policy) {
  std::string text;
  const std::string shown = redact_url(url);
  if (!remote_get_if_exists(url, text, kMaxShardListBytes, policy))
    throw ConfigError(shown + ": not found on its server (404)");
  std::istringstream in(std::move(text));
  const std::size_t slash = url.rfind('/');
  return parse_shard_counts(in, url.substr(0, slash), shown);
}

std::string format_wids_index(const std::string& name, const std::vector<ShardCount>& shards) {
  json list = json::array();
  for (const ShardCount& s : shards)
    list.push_back({{"url", s.name}, {"nsamples", s.samples}, {"filesize", s.bytes}});
  const json index = {{"__kind__", "wids-shard-index-v1"},
                      {"wids_version", 1},
                      {"name", name},
                      {"shardlist", std::move(list)}};
  return index.dump(1) + "\n";
}

}  // namespace stoke::detail
