// The supervisor with its worker processes replaced by threads (FakeWorkers): each fake worker
// finishes its handshake, hangs before it or crashes on cue, serves its ring as stoke-worker
// does (without decoding anything), and can die in the middle of a chunk. No process starts.
#include "supervision/supervisor.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <functional>
#include <thread>

#include "supervision/worker_pool.hpp"
#include "test_support.hpp"
#include "time_lapse.hpp"

namespace stoke::detail {
namespace {

using namespace std::chrono_literals;

// What the n-th start (0-based) of worker record i does.
struct Script {
  enum Start { kWork, kHang, kCrash } start = kWork;
  int die_after = -1;  // kWork: crash (SIGSEGV) while holding chunk die_after + 1
};

// What the fakes saw, kept by the test: the supervisor destroys its workers when it stops.
struct FakeCounts {
  std::array<std::atomic<int>, 8> starts{};
  std::atomic<int> tasks_before_handshake{0};  // found in the ring of a worker not yet ready
};

class FakeWorkers final : public WorkerProcesses {
 public:
  FakeWorkers(ArenaView arena, int done_fd, std::function<Script(int worker, int start)> script,
              std::shared_ptr<FakeCounts> counts)
      : arena_(arena),
        done_fd_(done_fd),
        script_(std::move(script)),
        counts_(std::move(counts)),
        procs_(8) {}
  ~FakeWorkers() override { stop_all(0ms); }

  const std::string& executable() const override { return name_; }

  void spawn(int i) override {
    reset_worker_record(arena_, static_cast<std::uint32_t>(i));
    Proc& p = procs_[static_cast<std::size_t>(i)];
    p.pidfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p.pid = next_pid_++;
    p.killed = std::make_shared<std::atomic<bool>>(false);
    const Script s = script_(i, counts_->starts[static_cast<std::size_t>(i)]++);
    p.thread = std::thread([this, i, s, killed = p.killed, fd = p.pidfd] {
      exits_[static_cast<std::size_t>(i)] = serve(i, s, *killed);
      const std::uint64_t one = 1;
      (void)!::write(fd, &one, sizeof one);
    });
  }
  pid_t pid(int i) const override { return procs_[static_cast<std::size_t>(i)].pid; }
  int pidfd(int i) const override { return procs_[static_cast<std::size_t>(i)].pidfd; }
  bool running(int i) const override { return procs_[static_cast<std::size_t>(i)].pid > 0; }
  void kill(int i) override { procs_[static_cast<std::size_t>(i)].killed->store(true); }
  WorkerExit reap(int i) override {
    Proc& p = procs_[static_cast<std::size_t>(i)];
    p.thread.join();
    ::close(p.pidfd);
    p = Proc{};
    return exits_[static_cast<std::size_t>(i)];
  }
  void stop_all(std::chrono::milliseconds) override {
    for (std::size_t i = 0; i < procs_.size(); ++i)
      if (procs_[i].pid > 0) {
        procs_[i].killed->store(true);
        reap(static_cast<int>(i));
      }
  }

 private:
  struct Proc {
    pid_t pid = -1;
    int pidfd = -1;
    std::shared_ptr<std::atomic<bool>> killed;
    std::thread thread;
  };

  WorkerExit serve(int i, const Script& s, const std::atomic<bool>& killed) {
    WorkerRecord& r = arena_.worker(static_cast<std::uint32_t>(i));
    if (s.start == Script::kCrash) return {true, SIGSEGV};
    if (s.start == Script::kHang) {
      while (!killed.load()) std::this_thread::sleep_for(1ms);
      Task t;
      if (r.tasks.pop(t)) counts_->tasks_before_handshake.fetch_add(1);
      return {true, SIGKILL};
    }
    r.state.store(WorkerRecord::kReady, std::memory_order_release);
    notify();
    for (int done = 0;;) {
      if (killed.load()) return {true, SIGKILL};
      Task t;
      if (!r.tasks.pop(t)) {
        r.tasks_posted.wait_for(1ms);
        continue;
      }
      if (t.kind == Task::kStop) return {false, 0};
      if (done == s.die_after) {
        r.current_sample.store(t.global_begin);  // the sample it "crashed" on
        return {true, SIGSEGV};
      }
      Completion c;
      c.seq = t.seq;
      while (!r.done.push(c)) std::this_thread::sleep_for(1ms);
      ++done;
      notify();
    }
  }
  void notify() const {
    const std::uint64_t one = 1;
    (void)!::write(done_fd_, &one, sizeof one);
  }

  ArenaView arena_;
  int done_fd_;
  std::function<Script(int, int)> script_;
  std::shared_ptr<FakeCounts> counts_;
  std::string name_ = "fake-worker";
  std::vector<Proc> procs_;
  pid_t next_pid_ = 1000;
  std::array<WorkerExit, 8> exits_{};  // each written by its worker's thread, read after join
};

// A loader's shared state over a small arena: 40 samples, batches of 4, 4 slots, 1x1 pixels.
struct Rig {
  explicit Rig(int pool, std::function<Script(int, int)> script, double startup_s = 30,
               int batches = 10)
      : config(options(pool, startup_s), Pipeline(1, 1, 1)) {
    config.plan = PlanConfig{batches * 4, 4, 1, 0, 1, 0, false, LastBatch::kPad, {}, 0};
    config.batches_per_epoch = batches;
    config.initial_workers = pool;
    config.capacity = 8;
    config.initial_slots = 4;
    ArenaPlanInput in;
    in.batch = 4;
    in.out_height = in.out_width = in.out_channels = 1;
    in.worker_capacity = 8;
    in.poison_capacity = 16;
    in.initial_slots = 4;
    ArenaHeader h = plan_arena(in);
    h.datasets[0].kind = DatasetKind::kRaw;
    h.datasets[0].sample_count = h.sample_count = config.plan.samples;
    LoaderCore::Setup setup;
    setup.plan = config.plan;
    setup.initial_slots = 4;
    setup.chunk = 2;
    setup.monitor_window = 50;
    setup.created = std::chrono::steady_clock::now();
    setup.data = {"fake-data"};
    core = std::make_shared<LoaderCore>(
        h, [](std::uint8_t*) {}, setup);  // no index: raw data
    done_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    auto fake = std::make_unique<FakeWorkers>(core->view, done_fd, std::move(script), counts);
    supervisor = std::make_unique<Supervisor>(core, config, log, std::move(fake), done_fd, time);
  }
  ~Rig() {
    {
      MutexLock lock(core->mutex);
      core->stop = true;
    }
    core->wake();
    supervisor.reset();
    ::close(done_fd);
  }
  static Options options(int pool, double startup_s) {
    Options o;
    o.batch = 4;
    o.workers = pool;
    o.startup_timeout_s = startup_s;
    o.task_timeout_s = 0;
    return o;
  }

  // Takes the next batch like Loader::next(): its first planned sample, or the loader's error.
  std::int64_t next() {
    for (int i = 0; i < 5000; ++i) {
      {
        MutexLock lock(core->mutex);
        if (core->fatal) std::rethrow_exception(core->fatal);
        const int slot = core->slots.slot_of(core->slots.next_seq());
        if (slot >= 0 && core->slots[slot].state == SlotInfo::kReady) {
          const std::int64_t first = core->view.planned_ids(static_cast<std::uint32_t>(slot))[0];
          core->slots.deliver(slot);
          core->slots.release(slot);
          core->wake();
          return first;
        }
      }
      std::this_thread::sleep_for(2ms);
    }
    throw std::runtime_error("no batch within 10 s");
  }
  bool logged(const std::string& text) {
    log.flush();
    return lines.contains(text);
  }

  test::LogLines lines;
  ManualTime time;  // the supervisor's deadlines: moves only when a test says
  ResolvedConfig config;
  EventLog log{lines.sink()};
  std::shared_ptr<LoaderCore> core;
  int done_fd = -1;
  std::shared_ptr<FakeCounts> counts = std::make_shared<FakeCounts>();
  int starts(int worker) const { return counts->starts[static_cast<std::size_t>(worker)].load(); }
  std::unique_ptr<Supervisor> supervisor;
};

Script always(Script s) {
  return s;
}

TEST(Supervisor, FakeWorkersDeliverEveryBatchInOrder) {
  Rig rig(2, [](int, int) { return always({}); });
  rig.supervisor->start();
  for (int b = 0; b < 10; ++b) EXPECT_EQ(rig.next(), 4 * b);
  EXPECT_EQ(rig.starts(0), 1);
  EXPECT_EQ(rig.starts(1), 1);
}

TEST(Supervisor, AWorkerThatDiesMidChunkIsReplacedAndItsChunksRedone) {
  Rig rig(2, [](int worker, int start) {
    return worker == 0 && start == 0 ? Script{Script::kWork, 1} : Script{};
  });
  rig.supervisor->start();
  for (int b = 0; b < 10; ++b) EXPECT_EQ(rig.next(), 4 * b);
  EXPECT_EQ(rig.starts(0), 2);
  EXPECT_TRUE(
      rig.logged("died with signal 11 (Segmentation fault) while producing fake-data sample"));
  EXPECT_TRUE(rig.logged("; restarting it and redoing"));
  MutexLock lock(rig.core->mutex);
  EXPECT_EQ(rig.core->metrics.snapshot(std::chrono::steady_clock::now(), 2, 4).worker_restarts, 1);
}

TEST(Supervisor, AWorkerOfTheFirstPoolThatCrashesWhileStartingIsReplaced) {
  Rig rig(1, [](int, int start) { return start < 2 ? Script{Script::kCrash} : Script{}; });
  rig.supervisor->start();
  EXPECT_EQ(rig.starts(0), 3);
  for (int b = 0; b < 10; ++b) EXPECT_EQ(rig.next(), 4 * b);
  EXPECT_TRUE(
      rig.logged("worker 0 (pid 1000) died with signal 11 (Segmentation fault) during "
                 "start-up; restarting it"));
}

TEST(Supervisor, AWorkerThatCrashesAtEveryStartIsFatalAfterTheStartUpBudget) {
  Rig rig(1, [](int, int) { return Script{Script::kCrash}; });
  try {
    rig.supervisor->start();
    FAIL() << "a worker that never starts was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "worker 0 died 5 times in a row during start-up; last death: signal 11 "
                 "(Segmentation fault)");
  }
  EXPECT_EQ(rig.starts(0), 5);
}

// Worker 1 hangs before its handshake at every start: it never gets a chunk, every start is
// killed at the deadline, and the fifth such kill stops the loader, although the task timeout
// is off and worker 0 keeps delivering meanwhile. The supervisor's time runs 1000x fast.
TEST(Supervisor, AWorkerThatHangsAtStartUpGetsNoWorkAndIsFatalAfterTheBudget) {
  Rig rig(
      1, [](int worker, int) { return worker == 1 ? Script{Script::kHang} : Script{}; }, 30,
      100000);
  rig.supervisor->start();
  EXPECT_EQ(rig.next(), 0);
  const test::TimeLapse lapse(rig.time, std::chrono::seconds(1));
  rig.supervisor->request_size(2);
  std::string error;
  try {
    for (int b = 1; b < 100000; ++b) rig.next();
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error,
            "worker 1 did not finish starting within 30 s, 5 times in a row; stoke-worker "
            "(fake-worker) hangs at start-up");
  EXPECT_EQ(rig.starts(1), 5);
  EXPECT_EQ(rig.counts->tasks_before_handshake.load(), 0);
  EXPECT_TRUE(rig.logged("did not finish starting within 30 s; killing it"));
}

TEST(Supervisor, ShrinkingThePoolStopsTheRetiredWorkersWithoutRedoingAnything) {
  Rig rig(3, [](int, int) { return always({}); });
  rig.supervisor->start();
  EXPECT_EQ(rig.next(), 0);
  rig.supervisor->request_size(1);
  for (int b = 1; b < 10; ++b) EXPECT_EQ(rig.next(), 4 * b);
  for (int i = 0; i < 500 && rig.supervisor->view().workers != 1; ++i)
    std::this_thread::sleep_for(2ms);
  const Supervisor::PoolView v = rig.supervisor->view();
  EXPECT_EQ(v.workers, 1);
  EXPECT_FALSE(v.workers_auto);
  EXPECT_FALSE(rig.logged("redo"));  // retired by a stop task, not by a death
  EXPECT_TRUE(rig.logged("resizing the worker pool from 3 to 1 workers (requested)"));
}

}  // namespace
}  // namespace stoke::detail
