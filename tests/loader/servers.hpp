#pragma once
// Real servers on 127.0.0.1 for the tests of remote shards: nginx serving a folder, SeaweedFS's
// S3 gateway with a bucket. Each is a child process started in the fixture's constructor
// (which waits until it answers) and stopped in its destructor (SIGTERM, then SIGKILL after a
// grace period). Without the server program, tests skip, unless STOKE_REQUIRE_SERVERS=1 (CI)
// makes that a failure.
//
// Thread-safety: one test thread.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace stoke::test {

inline bool servers_required() {
  const char* v = std::getenv("STOKE_REQUIRE_SERVERS");
  return v != nullptr && std::string(v) == "1";
}

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

inline bool accepts(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// A child process, stopped when this goes away.
class Child {
 public:
  Child() = default;
  explicit Child(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  Child& operator=(Child&& o) noexcept {
    stop();
    pid_ = o.pid_;
    o.pid_ = -1;
    return *this;
  }

  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  // True once the child has exited (it is reaped then, and stop() has nothing left to do).
  bool exited() {
    if (pid_ <= 0) return true;
    if (::waitpid(pid_, nullptr, WNOHANG) == 0) return false;
    pid_ = -1;
    return true;
  }
  // SIGTERM, then SIGKILL when it has not exited within the grace period.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000)) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto until = std::chrono::steady_clock::now() + grace;
    while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// True when a listening socket could take `port` on 127.0.0.1 now (bound with SO_REUSEADDR, as
// servers bind): unlike accepts(), this also sees a port held by a connected client socket.
inline bool bindable(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// The lowest port the kernel hands out for outgoing connections (ip_local_port_range).
inline int ephemeral_port_floor() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  in >> low;
  return low;
}

// Waits until `port` accepts; gives up early when `child` (if given) has exited.
inline bool wait_until_accepting(int port, std::chrono::seconds limit, Child* child = nullptr) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (accepts(port)) return true;
    if (child != nullptr && child->exited()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// nginx serving `root` (read-only) on 127.0.0.1, its own prefix folder `work`.
class Nginx {
 public:
  static constexpr const char* kBinary = "/usr/sbin/nginx";
  static bool available() { return ::access(kBinary, X_OK) == 0; }

  // `http_extra` goes into the http block, `location_extra` into "location /" (a rate limit,
  // say, that answers with 429s).
  // `server_extra` goes into the server block (more locations, say).
  Nginx(const std::filesystem::path& root, const std::filesystem::path& work,
        const std::string& http_extra = "", const std::string& location_extra = "",
        const std::string& server_extra = "")
      : port_(free_port()), work_(work) {
    std::filesystem::create_directories(work / "tmp");
    std::ofstream conf(work / "nginx.conf");
    conf << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
         << "error_log " << (work / "error.log").string() << ";\n"
         << "pid " << (work / "nginx.pid").string() << ";\n"
         << "events { worker_connections 256; }\nhttp {\n  access_log off;\n";
    for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
      conf << "  " << t << "_temp_path " << (work / "tmp").string() << ";\n";
    conf << http_extra << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root "
         << root.string() << ";\n    location / { " << location_extra << " }\n"
         << server_extra << "  }\n}\n";
    conf.close();
    start();
  }

  void start() {
    child_ = Child({kBinary, "-p", work_.string(), "-c", (work_ / "nginx.conf").string()},
                   (work_ / "stdout.log").string());
    started_ = wait_until_accepting(port_, std::chrono::seconds(10));
  }
  void stop() { child_.stop(); }

  bool started() const { return started_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  std::filesystem::path work_;
  Child child_;
  bool started_ = false;
};

// A test server written in Python (a script in tests/loader) on a port of its choosing, which it
// writes to a file once it listens. Run by build/servers' interpreter (setup.sh installs
// botocore there), else python3 on the PATH.
class PythonServer {
 public:
  static std::string interpreter() {
    const std::string installed = STOKE_SOURCE_DIR "/build/servers/bin/python";
    if (::access(installed.c_str(), X_OK) == 0) return installed;
    for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
      if (::access(p, X_OK) == 0) return p;
    return "";
  }
  static bool available() { return !interpreter().empty(); }
  // Whether the interpreter has `module` (botocore, for sigv4_server.py).
  static bool can_import(const std::string& module) {
    if (!available()) return false;
    const std::string command = interpreter() + " -c 'import " + module + "' 2>/dev/null";
    return std::system(command.c_str()) == 0;
  }

  // Runs tests/loader/`script` with `args` and --port-file; its output goes to work/NAME.log.
  PythonServer(const std::string& script, std::vector<std::string> args,
               const std::filesystem::path& work)
      : work_(work) {
    std::filesystem::create_directories(work);
    const std::filesystem::path port_file = work / (script + ".port");
    std::filesystem::remove(port_file);
    std::vector<std::string> argv = {interpreter(), STOKE_SOURCE_DIR "/tests/loader/" + script,
                                     "--port-file", port_file.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    log_ = work / (script + ".log");
    child_ = Child(argv, log_.string());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until && child_.running()) {
      std::ifstream in(port_file);
      if (in >> port_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    started_ = port_ > 0 && wait_until_accepting(port_, std::chrono::seconds(10));
  }

  bool started() const { return started_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // What the script wrote to its standard output and error.
  std::string output() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  std::filesystem::path work_;
  std::filesystem::path log_;
  Child child_;
  int port_ = 0;
  bool started_ = false;
};

// SeaweedFS (`weed server -s3`) with one identity (access key / secret below) on free ports.
class SeaweedS3 {
 public:
  static constexpr const char* kAccessKey = "stoke-test-key";
  static constexpr const char* kSecretKey = "stoke-test-secret";

  // The weed binary: STOKE_WEED, else build/servers/bin/weed (setup.sh's), else `weed` on the
  // PATH; "" when there is none.
  static std::string binary() {
    if (const char* v = std::getenv("STOKE_WEED"); v != nullptr && ::access(v, X_OK) == 0) return v;
    // Where setup.sh installs it.
    const std::string installed = STOKE_SOURCE_DIR "/build/servers/bin/weed";
    if (::access(installed.c_str(), X_OK) == 0) return installed;
    const char* path = std::getenv("PATH");
    std::string dirs = path == nullptr ? "" : path;
    for (std::size_t from = 0; from <= dirs.size();) {
      const std::size_t colon = std::min(dirs.find(':', from), dirs.size());
      const std::string candidate = dirs.substr(from, colon - from) + "/weed";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      from = colon + 1;
    }
    return "";
  }

  explicit SeaweedS3(const std::filesystem::path& work) : work_(work) {
    std::filesystem::create_directories(work);
    std::ofstream conf(work / "s3.json");
    conf << R"({"identities": [{"name": "stoke", "credentials": [{"accessKey": ")" << kAccessKey
         << R"(", "secretKey": ")" << kSecretKey
         << R"("}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]})";
    conf.close();
    // weed dies when one of its ports is taken between the pick and its bind (another test's
    // server, or one of weed's own outgoing connections); it is then started again on new ports.
    for (int attempt = 0; attempt < kStartAttempts && !started_; ++attempt) {
      std::filesystem::remove_all(work / "data");  // nothing of a dead try's metadata is kept
      std::filesystem::create_directories(work / "data");
      pick_ports();
      start();
      if (!started_ && !child_.exited()) break;  // alive but silent for 60 s: not a port clash
    }
  }

  // Starts weed on the ports picked (again on the same ports after stop() or kill()).
  void start() {
    const std::string w = binary();
    child_ = Child(
        {w, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + (work_ / "data").string(),
         "-master.port=" + std::to_string(ports_[0]), "-volume.port=" + std::to_string(ports_[1]),
         "-filer.port=" + std::to_string(ports_[2]), "-s3", "-s3.port=" + std::to_string(ports_[3]),
         "-s3.config=" + (work_ / "s3.json").string(), "-volume.max=8",
         // No fixed default ports (tests run side by side), nothing beyond 127.0.0.1.
         "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false"},
        (work_ / "weed.log").string());
    started_ = wait_until_accepting(ports_[3], std::chrono::seconds(60), &child_);
  }
  void stop() { child_.stop(std::chrono::milliseconds(5000)); }
  // No grace: SIGKILL straight after SIGTERM, as a crash would end it.
  void kill() { child_.stop(std::chrono::milliseconds(0)); }

  bool started() const { return started_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(ports_[3]); }
  std::filesystem::path log() const { return work_ / "weed.log"; }
  // The log's last lines, for a failure message (the test's folder is gone when CI reports).
  std::string log_tail(std::size_t lines = 15) const {
    std::ifstream in(log());
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);) all.push_back(line);
    std::string out;
    for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
      out += "\n  " + all[i];
    return out;
  }

  // curl with this server's credentials (SigV4): a bucket created, a file put.
  std::string curl(const std::string& args) const {
    return std::string("curl -sS -f --retry 20 --retry-delay 1 --retry-all-errors ") +
           "--aws-sigv4 aws:amz:us-east-1:s3 --user " + kAccessKey + ":" + kSecretKey + " " + args;
  }

 private:
  static constexpr int kStartAttempts = 3;

  // Four services, each with an HTTP port and a gRPC port (HTTP + 10000). Both are drawn below
  // the kernel's range for outgoing connections, so no client socket can hold one, and each
  // must be bindable now.
  void pick_ports() {
    static std::mt19937 draw(std::random_device{}());
    const int top = ephemeral_port_floor() - 10000;
    std::vector<int> taken;
    for (int& p : ports_) {
      do {
        p = top > 11000 ? std::uniform_int_distribution<int>(10000, top - 1)(draw) : free_port();
      } while (p + 10000 > 65535 || std::count(taken.begin(), taken.end(), p) > 0 ||
               std::count(taken.begin(), taken.end(), p + 10000) > 0 || !bindable(p) ||
               !bindable(p + 10000));
      taken.push_back(p);
      taken.push_back(p + 10000);
    }
  }

  std::filesystem::path work_;
  int ports_[4] = {};
  Child child_;
  bool started_ = false;
};

}  // namespace stoke::test

#define STOKE_SKIP_WITHOUT(available, what)                                           \
  do {                                                                                \
    if (!(available)) {                                                               \
      if (::stoke::test::servers_required()) FAIL() << (what) << " is not installed"; \
      GTEST_SKIP() << (what) << " is not installed (CI installs it; see .ci/run)";    \
    }                                                                                 \
  } while (0)
