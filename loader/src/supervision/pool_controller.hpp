#pragma once
// The worker pool's records and their roles. Record i is idle (no process, none wanted), active
// (receives work) or retiring (finishes the chunks it holds, then is told to stop); a resize
// moves records between the roles. No processes and no lock of its own: the Supervisor keeps
// one under LoaderCore's mutex and carries out what it decides (spawning a record, posting a
// stop task), so these rules are tested without a worker (pool_controller_test.cpp).
//
// Invariants: members() lists the non-idle records in ascending order; size() is the pool's
// size, the number of active records (kept at 1 or more; after a failed spawn it may count one
// that has no process, until the next resize); a record is queued for spawning only while it is
// active or retiring and has not been told to stop.

#include <vector>

namespace stoke::detail {

class PoolController {
 public:
  enum class Role { kIdle, kActive, kRetiring };

  // `capacity` records, of which the first `initial` are active: the initial pool, which the
  // caller spawns (they are not queued in take_growth()).
  PoolController(int capacity, int initial);

  int capacity() const { return static_cast<int>(records_.size()); }
  int size() const { return size_; }
  Role role(int i) const { return records_[static_cast<std::size_t>(i)].role; }
  bool active(int i) const { return role(i) == Role::kActive; }
  bool retiring(int i) const { return role(i) == Role::kRetiring; }
  const std::vector<int>& members() const { return members_; }

  // Makes n (clamped to 1..capacity) records active. Retiring records not yet told to stop come
  // back first; then idle records, lowest first, are queued for spawning; beyond n, the highest
  // active records retire. Work a retiring record holds is finished by it, so no chunk moves
  // and none is redone. Returns the new size.
  int resize(int n);
  // The records resize() made active that need a process, in the order queued; the caller
  // spawns each (or reports spawn_failed()).
  std::vector<int> take_growth();
  // Record i could not be spawned: it is idle again, and the pool one smaller (never below 1).
  void spawn_failed(int i);

  // The retiring records that have not been told to stop: each is stopped (stop_sent()) once
  // its chunks are done, or retired() when it has no process.
  std::vector<int> retiring_not_stopped() const;
  void stop_sent(int i);
  // Record i has no process any more (it retired, died while retiring, or was never started):
  // it is idle, and no longer queued for spawning.
  void retired(int i);

 private:
  // What the controller knows of record i.
  struct Record {
    Role role = Role::kIdle;
    bool stop_sent = false;  // told to stop (only while retiring)
  };
  Record& at(int i) { return records_[static_cast<std::size_t>(i)]; }
  const Record& at(int i) const { return records_[static_cast<std::size_t>(i)]; }

  std::vector<Record> records_;
  std::vector<int> members_;
  std::vector<int> growth_;
  int size_ = 0;
};

}  // namespace stoke::detail
