// stoke-train: trains the bundled CNN data-parallel on stoke batches, evaluates it after every
// epoch, and keeps one checkpoint that resumes exactly. See trainer/README.md.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "mpi_world.hpp"
#include "progress.hpp"
#include "reducer.hpp"
#include "stoke/devices.hpp"
#include "stoke/loader.hpp"
#include "stoke/mnist.hpp"
#include "stoke/names.hpp"
#include "stoke/tools/cli.hpp"
#include "stoke/tools/fashion_mnist.hpp"
#include "stoke/tools/format.hpp"
#include "trainer.hpp"

namespace {

using namespace stoke;
using namespace stoke::train;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};

extern "C" void on_signal(int sig) {
  g_signal.store(sig);
}

struct Args {
  std::string data = tools::kDefaultFashionMnistDir;
  std::string devices = "auto";  // checked by DeviceSet::parse while parsing
  int workers = 1;
  int batch = 128;
  int epochs = 20;
  std::int64_t steps = 0;  // 0: epochs decide
  float lr = 0.05f;
  std::uint64_t seed = 0;
  bool sync_bn = false;
  Schedule schedule = Schedule::kCosine;
  ImageSize size;  // 0x0: IDX images' own size, image folders 32x32
  int classes = 10;
  int pad = 1;
  std::string checkpoint = "stoke-train.ckpt";
  std::string resume;
  std::string eval_only;
  bool progress = true;
  // Flags given on the command line, so a resumed run can refuse ones that contradict the
  // checkpoint.
  std::vector<std::string> given;
};

Schedule parse_schedule(const std::string& word) {
  if (word == "cosine") return Schedule::kCosine;
  if (word == "step") return Schedule::kStep;
  throw ConfigError("schedule must be cosine or step, got '" + word + "'");
}

// Rejects sizes the model cannot take: two 2x2 poolings need at least 4 pixels a side.
ImageSize parse_train_size(const std::string& word) {
  const ImageSize s = parse_size(word);
  if (s.height < 4 || s.width < 4)
    throw ConfigError("size must be at least 4x4 (the model pools twice), got '" + word + "'");
  return s;
}

// The command line; nullopt: go on, else the exit code (--help, usage errors: see cli.hpp).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app(
      "Trains a small CNN (conv-BN-ReLU-pool x2, linear) data-parallel on stoke "
      "batches.",
      "stoke-train");
  tools::configure(app);
  app.footer("Multi-rank: mpirun -np R stoke-train ... (as root add --allow-run-as-root).");
  app.add_option("--data", a.data, "IDX folder, image folder or list file")
      ->type_name("DIR")
      ->capture_default_str();
  tools::add_word(
      app, "--devices", a.devices,
      [](const std::string& w) {
        DeviceSet::parse(w);  // refused here, before MPI starts
        return w;
      },
      "auto (every GPU, else cpu:1), cpu:G or cuda:0,1,... (default auto)")
      ->type_name("SPEC");
  tools::add_count_or_auto(app, "--workers", a.workers, 0, 512,
                           "loader worker processes (default 1); auto starts with one and grows "
                           "or shrinks the pool live to keep the data stall under 2%");
  app.add_option("--batch", a.batch, "global batch over all ranks and devices")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--epochs", a.epochs, "epochs")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--steps", a.steps, "train exactly N steps instead (the schedule spans N)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--lr", a.lr, "peak learning rate, SGD momentum 0.9, decay 5e-4")
      ->check(stoke::tools::positive())
      ->capture_default_str();
  tools::add_word(app, "--schedule", a.schedule, parse_schedule,
                  "cosine (default) or step (/10 at 50% and 75%)");
  app.add_option("--seed", a.seed, "model initialization and data order")->capture_default_str();
  app.add_flag("--sync-bn", a.sync_bn, "BatchNorm statistics over the whole batch, not per device");
  tools::add_word(app, "--size", a.size, parse_train_size,
                  "train at HxW, or N for NxN (default: IDX images' own size; image folders 32)")
      ->type_name("HxW|N");
  app.add_option("--classes", a.classes, "classes in the data")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--pad", a.pad,
                 "small images: random crop after padding N pixels, plus flips "
                 "(0 = flips only)")
      ->check(CLI::Range(0, 1 << 10))
      ->capture_default_str();
  app.add_option("--checkpoint", a.checkpoint,
                 "where to save; written after every epoch and on "
                 "SIGINT/SIGTERM, atomically")
      ->type_name("PATH")
      ->capture_default_str();
  app.add_option("--resume", a.resume, "continue a run exactly where CKPT left it")
      ->type_name("CKPT");
  app.add_option("--eval-only", a.eval_only,
                 "evaluate CKPT on the test split and print its accuracy")
      ->type_name("CKPT");
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no progress output");
  if (const auto code = tools::parse(app, argc, argv)) return code;
  a.progress = !no_progress;
  for (const CLI::Option* o : app.get_options())
    if (o->count() > 0) a.given.push_back(o->get_name());
  return std::nullopt;
}

bool given(const Args& a, const char* flag) {
  return std::find(a.given.begin(), a.given.end(), flag) != a.given.end();
}

// Loader options for one split; `batch` is this rank's share of the global batch.
Options loader_options(const Args& a, const RunConfig& c, const DeviceSet& devices,
                       const MpiWorld& world, Split split) {
  Options o;
  o.data = a.data;
  o.split = split;
  o.batch = c.batch / world.size();
  o.devices = devices;
  o.workers = a.workers;
  o.seed = c.seed;
  o.rank = world.rank();
  o.world = world.size();
  o.dtype = DType::kFloat32;
  o.layout = Layout::kNCHW;
  o.height = c.shape.height;
  o.width = c.shape.width;
  if (split == Split::kTest) {
    o.augment = Augment::kEvaluation;
    o.shuffle = false;
    o.last_batch = LastBatch::kPad;  // valid flags mark the repeats, so each image counts once
  } else {
    o.augment = Augment::kTraining;
    o.last_batch = LastBatch::kDrop;
    if (is_idx_folder(a.data)) {
      // Small images: the built-in preset's side/7 margin slows learning on 28x28 images.
      Pipeline p(c.shape.height, c.shape.width, c.shape.channels);
      if (c.pad > 0) p.pad_random_crop(c.pad, c.shape.height, c.shape.width);
      p.horizontal_flip(0.5f);
      o.pipeline = p;
    }
  }
  return o;
}

struct Session {
  DeviceSet devices;
  std::unique_ptr<Reducer> reducer;
  std::unique_ptr<Trainer> trainer;
};

Session make_session(const RunConfig& c, const DeviceSet& devices, const MpiWorld& world) {
  const int per_rank = c.batch / world.size();
  Session s;
  s.devices = devices;
  std::vector<std::unique_ptr<DeviceOps>> ops;
  if (devices.kind == DeviceSet::Kind::kCuda) {
    std::vector<DeviceOps*> gpus;
    for (int id : devices.ids) {
      ops.push_back(make_cuda_ops(id));
      gpus.push_back(ops.back().get());
    }
    s.reducer = make_nccl_reducer(world, gpus);
  } else {
    for (int g = 0; g < devices.count; ++g) ops.push_back(make_cpu_ops(g));
    s.reducer = make_host_reducer(world);
  }
  s.trainer = std::make_unique<Trainer>(c.shape, c.hyper, std::move(ops), *s.reducer,
                                        per_rank / devices.count);
  return s;
}

// The devices this rank drives. Every rank must drive the same kind and number (NCCL and the
// epoch plan assume it). Under mpirun, `auto` gives each rank one GPU, its local rank's, so
// ranks on one machine do not all claim every GPU.
DeviceSet resolve_devices(const std::string& spec, const MpiWorld& world) {
  DeviceSet d = DeviceSet::parse(spec).resolve();
  if (spec == "auto" && world.size() > 1 && d.kind == DeviceSet::Kind::kCuda) {
    const int gpu = d.ids[static_cast<std::size_t>(MpiWorld::local_rank()) % d.ids.size()];
    d = DeviceSet::parse("cuda:" + std::to_string(gpu));
  }
  const int kind = d.kind == DeviceSet::Kind::kCuda ? 1 : 0;
  if (world.max(kind) != -world.max(-kind) || world.max(d.count) != -world.max(-d.count))
    throw ConfigError("the ranks disagree on their devices (this rank: " + d.to_string() +
                      "); every rank must drive the same kind and number of devices");
  return d;
}

void check_batch(int batch, const DeviceSet& devices, const MpiWorld& world) {
  const int unit = devices.count * world.size();
  if (batch % unit != 0) {
    const int lower = batch / unit * unit;
    throw ConfigError("--batch " + std::to_string(batch) + " is not a multiple of " +
                      std::to_string(world.size()) + " rank(s) x " + std::to_string(devices.count) +
                      " device(s); use " +
                      (lower > 0 ? std::to_string(lower) + " or " : std::string()) +
                      std::to_string(lower + unit));
  }
}

// The model's input shape: what the loader's pipeline produces for this data.
ModelShape shape_for(const Args& a) {
  ModelShape s;
  s.classes = a.classes;
  if (is_idx_folder(a.data)) {
    const IdxImages probe = read_idx(a.data, Split::kTest);
    s.channels = 1;
    s.height = a.size.height > 0 ? a.size.height : probe.rows;
    s.width = a.size.width > 0 ? a.size.width : probe.cols;
  } else {
    s.channels = 3;
    s.height = a.size.height > 0 ? a.size.height : 32;
    s.width = a.size.width > 0 ? a.size.width : 32;
  }
  return s;
}

struct Accuracy {
  std::int64_t correct = 0;
  std::int64_t images = 0;
  double value() const { return images > 0 ? static_cast<double>(correct) / images : 0; }
};

// Every test image exactly once: padded repeats in the last batch are not counted.
Accuracy evaluate(Trainer& trainer, Loader& test, const MpiWorld& world) {
  test.set_epoch(0);
  Accuracy acc;
  while (auto batch = test.next()) {
    const StepResult r = trainer.evaluate(*batch);
    acc.correct += r.correct;
    acc.images += r.valid;
  }
  double totals[2] = {static_cast<double>(acc.correct), static_cast<double>(acc.images)};
  world.sum(totals, 2);
  acc.correct = static_cast<std::int64_t>(totals[0]);
  acc.images = static_cast<std::int64_t>(totals[1]);
  if (acc.images != test.dataset_size())
    throw Error("evaluation counted " + std::to_string(acc.images) +
                " images; the test split has " + std::to_string(test.dataset_size()));
  return acc;
}

void print_accuracy(const Accuracy& acc, const MpiWorld& world) {
  if (world.rank() == 0) {
    std::printf("test accuracy %.4f\n", acc.value());
    std::fflush(stdout);
  }
}

int eval_only(const Args& a, const MpiWorld& world) {
  const Checkpoint ck = load_checkpoint(a.eval_only);
  const DeviceSet devices = resolve_devices(a.devices, world);
  RunConfig c = ck.config;
  c.batch = given(a, "--batch") ? a.batch : c.batch;
  check_batch(c.batch, devices, world);
  Session s = make_session(c, devices, world);
  s.trainer->load(ck.model);
  Loader test(loader_options(a, c, devices, world, Split::kTest));
  const Accuracy acc = evaluate(*s.trainer, test, world);
  if (world.rank() == 0)
    std::fprintf(stderr, "stoke-train: %s (step %lld) on %s: %lld of %lld test images correct\n",
                 a.eval_only.c_str(), static_cast<long long>(ck.model.step),
                 devices.to_string().c_str(), static_cast<long long>(acc.correct),
                 static_cast<long long>(acc.images));
  print_accuracy(acc, world);
  return 0;
}

// The run's configuration: from the flags, or from the checkpoint being resumed (flags that
// would change the run are refused rather than silently ignored). A new run's schedule length
// depends on the loader's epoch: set_schedule() fills it in once the loader exists.
RunConfig run_config(const Args& a, const std::optional<Checkpoint>& resumed) {
  if (resumed) {
    for (const char* flag : {"--batch", "--epochs", "--steps", "--lr", "--seed", "--sync-bn",
                             "--schedule", "--size", "--classes", "--pad"})
      if (given(a, flag))
        throw ConfigError(std::string(flag) + " cannot change when resuming: " + a.resume +
                          " fixes the run's configuration (drop the flag, or start a new run)");
    return resumed->config;
  }
  RunConfig c;
  c.shape = shape_for(a);
  c.seed = a.seed;
  c.batch = a.batch;
  c.pad = a.pad;
  c.hyper.lr = a.lr;
  c.hyper.schedule = a.schedule;
  c.hyper.sync_bn = a.sync_bn;
  return c;
}

void set_schedule(RunConfig& c, const Args& a, std::int64_t batches_per_epoch) {
  c.hyper.total_steps = a.steps > 0 ? a.steps : a.epochs * batches_per_epoch;
  c.epochs = static_cast<int>((c.hyper.total_steps + batches_per_epoch - 1) / batches_per_epoch);
  c.hyper.warmup_steps = static_cast<int>(std::min<std::int64_t>(200, c.hyper.total_steps / 10));
}

void save(const std::string& path, const RunConfig& c, const Trainer& trainer, const Loader& loader,
          const MpiWorld& world) {
  if (world.rank() != 0) return;
  save_checkpoint(path, Checkpoint{c, trainer.state(), loader.state()});
}

struct Totals {
  double images = 0;
  double wait_s = 0;
  double busy_s = 0;
  double stall() const { return wait_s + busy_s > 0 ? wait_s / (wait_s + busy_s) : 0; }
};

std::string workers_text(int workers) {
  if (workers == kAuto) return "auto workers";
  return std::to_string(workers) + (workers == 1 ? " worker" : " workers");
}

// The run's totals, then the loader's stall verdict (its moving window: the end of the run, after
// any automatic sizing has settled).
void summary(const Accuracy& acc, const Totals& t, double elapsed_s, const Args& a,
             const DeviceSet& devices, const Stats& loader) {
  std::fprintf(stderr,
               "stoke-train: done: test accuracy %.4f, %.1f s, %s img/s, data stall %.1f%% "
               "(%s, %s)\n",
               acc.value(), elapsed_s,
               tools::with_commas(t.images / std::max(1e-9, t.wait_s + t.busy_s)).c_str(),
               100 * t.stall(), devices.to_string().c_str(), workers_text(a.workers).c_str());
  if (loader.workers_auto)
    std::fprintf(stderr, "stoke-train: workers=auto settled on %d after %zu decision(s)\n",
                 loader.workers, loader.decisions.size());
  std::fprintf(stderr, "stoke-train: %s\n", loader.verdict.c_str());
}

int run_training(const Args& a, const MpiWorld& world) {
  std::optional<Checkpoint> resumed;
  if (!a.resume.empty()) resumed = load_checkpoint(a.resume);
  const DeviceSet devices = resolve_devices(a.devices, world);
  RunConfig c = run_config(a, resumed);
  check_batch(c.batch, devices, world);
  Options train_opts = loader_options(a, c, devices, world, Split::kTrain);
  if (resumed) train_opts.resume = resumed->loader;
  Loader loader(train_opts);
  if (!resumed) set_schedule(c, a, loader.batches_per_epoch());
  Loader test(loader_options(a, c, devices, world, Split::kTest));
  Session s = make_session(c, devices, world);
  if (resumed)
    s.trainer->load(resumed->model);
  else
    s.trainer->initialize(c.seed);

  if (world.rank() == 0)
    std::fprintf(
        stderr,
        "stoke-train: %s on %s x %d rank(s), batch %d, %lld steps (%d epochs of %lld), "
        "lr %g %s%s, %s%s\n",
        c.shape.describe().c_str(), devices.to_string().c_str(), world.size(), c.batch,
        static_cast<long long>(c.hyper.total_steps), c.epochs,
        static_cast<long long>(loader.batches_per_epoch()), c.hyper.lr,
        c.hyper.schedule == Schedule::kCosine ? "cosine" : "step",
        c.hyper.sync_bn ? ", sync-bn" : "", workers_text(a.workers).c_str(),
        resumed ? (", resuming at step " + std::to_string(resumed->model.step)).c_str() : "");

  Progress progress(a.progress && world.rank() == 0);
  Totals totals;
  Accuracy last;
  bool evaluated = false;
  const auto start = Clock::now();
  auto mark = Clock::now();
  while (s.trainer->step() < c.hyper.total_steps) {
    std::optional<Batch> batch_opt = loader.next();
    const auto got = Clock::now();
    if (!batch_opt) {  // the end of an epoch: next() starts the following one
      mark = Clock::now();
      continue;
    }
    totals.wait_s += std::chrono::duration<double>(got - mark).count();
    Batch batch = std::move(*batch_opt);
    const std::int64_t epoch = batch.epoch(), index = batch.index();
    const StepResult r = s.trainer->train_step(batch);
    batch.release();
    mark = Clock::now();
    totals.busy_s += std::chrono::duration<double>(mark - got).count();
    totals.images += c.batch;
    const std::int64_t bpe = loader.batches_per_epoch();
    progress.update({epoch, c.epochs, index + 1, bpe,
                     totals.images / (totals.wait_s + totals.busy_s), totals.stall(),
                     r.global_loss});
    evaluated = false;
    if (index + 1 == bpe || s.trainer->step() == c.hyper.total_steps) {
      progress.finish_line();
      last = evaluate(*s.trainer, test, world);
      print_accuracy(last, world);
      save(a.checkpoint, c, *s.trainer, loader, world);
      evaluated = true;
      mark = Clock::now();
    }
    // Every rank stops at the same step (the signal may reach them at different times), and
    // reports the signal that stopped the run.
    const int stop = world.max(g_signal.load());
    if (stop != 0 && s.trainer->step() < c.hyper.total_steps) {
      progress.finish_line();
      if (!evaluated) save(a.checkpoint, c, *s.trainer, loader, world);
      if (world.rank() == 0)
        std::fprintf(stderr,
                     "stoke-train: interrupted at step %lld: checkpoint saved to %s; continue "
                     "with --resume %s\n",
                     static_cast<long long>(s.trainer->step()), a.checkpoint.c_str(),
                     a.checkpoint.c_str());
      return 128 + stop;
    }
  }
  if (!evaluated) {
    last = evaluate(*s.trainer, test, world);
    print_accuracy(last, world);
    save(a.checkpoint, c, *s.trainer, loader, world);
  }
  if (world.rank() == 0) {
    std::fprintf(stderr, "stoke-train: checkpoint %s\n", a.checkpoint.c_str());
    summary(last, totals, std::chrono::duration<double>(Clock::now() - start).count(), a, devices,
            loader.stats());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const auto code = parse_args(argc, argv, args)) return *code;
  std::optional<MpiWorld> world;
  int code = 0;
  try {
    world.emplace();
    // The first SIGINT/SIGTERM asks for a checkpoint at the next step; a second one (the
    // handler is reset) ends the process at once, should a step hang.
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return args.eval_only.empty() ? run_training(args, *world) : eval_only(args, *world);
  } catch (const stoke::ConfigError& e) {
    std::fprintf(stderr, "stoke-train: %s\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoke-train: %s\n", e.what());
    code = 1;
  }
  std::fflush(stderr);
  if (world) world->abort(code);
  return code;
}
