#pragma once
// Finding the stoke-worker executable that belongs to this library.
// Thread-safety: reentrant.

#include <string>

namespace stoke::detail {

// `configured` when non-empty; else the stoke-worker installed beside this library (install
// tree: <libdir>/<relative path to libexec>/stoke/stoke-worker; build tree: lib/../libexec/stoke).
// Throws Error listing the places it looked.
std::string locate_worker(const std::string& configured);

// "<version>/layout<N>": what a worker must report in its handshake.
std::string worker_version_tag();

}  // namespace stoke::detail
