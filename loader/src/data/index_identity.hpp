#pragma once
// What a dataset index is built from, as text (its identity): the data path, the indexing
// options and the format, then the version (size, times, inode) of every input the index reads,
// so that a changed shard, list, annotation file or folder gives another text, hence another key
// and another index file (data/index_folder.hpp), and a stale one is never read.
//
// Thread-safety: reentrant.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset_index.hpp"
#include "remote/remote.hpp"

namespace stoke::detail {

// The text that names what the index of `data` would be built from, and the versions of those
// inputs: the options, then one line per input file or folder. std::nullopt when it cannot be
// named (a path that does not exist, a remote shard without an ETag): such data is indexed into
// a private file every time.
// `seen` (when given) keeps the remote shards' HEAD answers it asked for, by URL; `parquet`
// (when given) the Parquet files `data` names, when it names some.
std::optional<std::string> dataset_identity(
    const std::string& data, const IndexOptions& options,
    std::map<std::string, RemoteObject>* seen = nullptr,
    std::optional<std::vector<std::string>>* parquet = nullptr);

}  // namespace stoke::detail
