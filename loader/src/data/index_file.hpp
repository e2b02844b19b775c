#pragma once
// The dataset index as a file that every process of a machine maps: the training processes of
// all its ranks and all their workers. It is written once, by the first loader to need it, in
// the machine's shared folder (data/index_folder.hpp), keyed by what the index was built from:
// the data path, the indexing options, and the version of every input the index reads
// (data/index_identity.hpp), so a stale one is never read. Loaders that find it map it in
// milliseconds; loaders that arrive while it is written wait on its lock and then map it. Where
// no cache folder can be used, or the data cannot be keyed (remote shards without ETags), a
// loader indexes into a file of its own (a memfd) and maps that: the same code
// (data/index_format.hpp) reads both.
//
// Thread-safety: reentrant.

#include <memory>
#include <string>

#include "data/dataset_index.hpp"
#include "data/index_format.hpp"

namespace stoke::detail {

// The index of `data` (build_index's forms and errors), from the machine's shared index file
// under options.caches.root when one matches, else built and written there (or, when it cannot
// be, to a private file). Throws what build_index throws.
std::shared_ptr<const MappedIndex> index_dataset(const std::string& data,
                                                 const IndexOptions& options);

}  // namespace stoke::detail
