#include "harness/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <climits>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "comm/store.h"
#include "common/cores.h"
#include "common/error.h"
#include "common/run_id.h"
#include "worker/point_sync.h"
#include "harness/mpirun.h"

extern char** environ;

namespace tpb {

namespace {

std::atomic<bool> gInterrupted{false};
constexpr int kInterruptSignals[] = {SIGINT, SIGTERM, SIGHUP};

void onSignal(int) { gInterrupted.store(true); }

std::string selfExe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  TPB_CHECK_ERRNO(n, "readlink(/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

// Splits a rank's byte stream into lines and forwards each with a prefix.
struct LineForwarder {
  std::string prefix;
  std::ostream* out;
  std::string partial;
  std::string lastNonEmpty;
  MpirunOutput* mpirun = nullptr;  // viaMpirun: lines carry their rank's tag instead
  void feed(const char* data, std::size_t n) {
    partial.append(data, n);
    std::size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      emit(partial.substr(start, nl - start));
      start = nl + 1;
    }
    partial.erase(0, start);
  }
  void flush() {
    if (!partial.empty()) emit(partial);
    partial.clear();
  }
  void emit(const std::string& line) {
    if (mpirun)
      *out << mpirun->retag(line) << '\n';
    else
      *out << prefix << line << '\n';
    out->flush();
    if (line.find_first_not_of(" \t\r") != std::string::npos) lastNonEmpty = line;
  }
};

struct Child {
  RankExit exit;
  int outFd = -1, errFd = -1;
  bool running = false;
  LineForwarder out, err;
};

void drain(int& fd, LineForwarder& fwd) {
  if (fd < 0) return;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      fwd.feed(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fwd.flush();  // EOF or a real error: the stream is done
    close(fd);
    fd = -1;
    return;
  }
}

// "was killed by signal 9 (SIGKILL)" or "exited with code 1", then the last line on stderr.
std::string exitReason(const RankExit& e) {
  std::string s;
  if (e.signal) {
    s = std::string("was killed by signal ") + std::to_string(e.signal) + " (SIG" +
        (sigabbrev_np(e.signal) ? sigabbrev_np(e.signal) : "?") + ")";
  } else {
    s = "exited with code " + std::to_string(e.exitCode);
  }
  if (!e.lastError.empty()) s += ": " + e.lastError;
  return s;
}

std::string describe(const RankExit& e) { return "rank " + std::to_string(e.rank) + " " + exitReason(e); }

// The launch's side of worker/point_sync.h on several nodes: posts this node's failures and
// reads the first one posted. The requests go from a thread of its own, on a store connection
// of its own, so the launch loop never blocks on the store: a request to a node 0 that vanished
// without closing the connection (power, a cut cable) is never answered, and one unanswered for
// the heartbeat timeout is how this node learns that node 0 is lost (lost()). A store that
// refuses (node 0's process ended) is left alone: what happens to the ranks then is their
// transports' to report.
class SharedFailures {
 public:
  explicit SharedFailures(const LaunchSpec& spec) : silence_(spec.heartbeatTimeout) {
    if (!spec.sharedStore) return;
    state_ = std::make_shared<State>();
    const std::uint16_t port = spec.sharedStore->port();
    state_->thread = std::thread([s = state_, addr = spec.masterAddr, port, prefix = spec.pointPrefix,
                                  connectTimeout = spec.heartbeatTimeout] {
      auto poll = [&]() -> bool {
        std::vector<RankFailure> outbox;
        {
          std::lock_guard<std::mutex> lock(s->m);
          outbox.swap(s->outbox);
        }
        s->calls.begin();
        try {
          if (!s->store) s->store = Store::connect(addr, port, connectTimeout);
          for (const RankFailure& f : outbox) postFailure(*s->store, prefix, f);
          const auto f = postedFailure(*s->store, prefix);
          std::lock_guard<std::mutex> lock(s->m);
          if (f) s->first = f->text(true);
          ++s->rounds;
        } catch (const std::exception&) {
          std::lock_guard<std::mutex> lock(s->m);
          s->gone = true;
        }
        s->calls.end();
        s->cv.notify_all();
        std::lock_guard<std::mutex> lock(s->m);
        return !s->gone;
      };
      std::unique_lock<std::mutex> lock(s->m);
      while (!s->stop) {
        lock.unlock();
        if (!poll()) break;
        lock.lock();
        s->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return s->stop || !s->outbox.empty(); });
      }
      if (!lock.owns_lock()) lock.lock();
      s->exited = true;
      s->cv.notify_all();
    });
  }
  ~SharedFailures() {
    if (!state_) return;
    std::unique_lock<std::mutex> lock(state_->m);
    state_->stop = true;
    state_->cv.notify_all();
    // A thread stuck in a request to a lost store is left behind (it owns what it uses); this
    // node's sweep stops on lost() and the process ends soon after.
    const auto wait = stuck() ? std::chrono::milliseconds(0) : silence_;
    if (state_->cv.wait_for(lock, wait, [&] { return state_->exited; })) {
      lock.unlock();
      state_->thread.join();
    } else {
      state_->thread.detach();
    }
  }
  SharedFailures(const SharedFailures&) = delete;
  SharedFailures& operator=(const SharedFailures&) = delete;

  bool active() const { return state_ != nullptr; }
  void post(int rank, const std::string& reason, const LaunchSpec& spec) {
    if (!state_) return;
    std::lock_guard<std::mutex> lock(state_->m);
    state_->outbox.push_back(RankFailure{rank, spec.host, spec.address, reason});
    state_->cv.notify_all();
  }
  // The first failure posted, as of the thread's last answer.
  std::optional<std::string> first() {
    if (!state_) return std::nullopt;
    std::lock_guard<std::mutex> lock(state_->m);
    return state_->first;
  }
  // Waits until this node's posts have gone out and the store has been read again, so that
  // first() is the point's first failure wherever it happened; or until a request has gone
  // unanswered for the heartbeat timeout, so that lost() says node 0 is lost. Without that
  // second wait, a rank that noticed the silent store first (its own heartbeat) and exited would
  // end the point before this node noticed, and the sweep would go on without node 0.
  void settle() {
    if (!state_) return;
    std::unique_lock<std::mutex> lock(state_->m);
    const std::uint64_t target = state_->rounds + 2;  // the round under way may predate the posts
    const auto deadline = std::chrono::steady_clock::now() + 2 * silence_;
    // stuck() is a clock, not an event: look again every 100 ms.
    while (!(state_->rounds >= target || state_->gone || state_->exited || stuck()) &&
           std::chrono::steady_clock::now() < deadline)
      state_->cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  // Set once a request has gone unanswered for the heartbeat timeout: node 0 is lost.
  std::optional<std::string> lost(const LaunchSpec& spec) const {
    if (!stuck()) return std::nullopt;
    return storeSilentReason(spec.masterAddr + ":" + std::to_string(spec.sharedStore->port()), silence_);
  }

 private:
  bool stuck() const { return state_ && state_->calls.stalledFor(silence_); }
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool stop = false, gone = false, exited = false;
    std::vector<RankFailure> outbox;
    std::optional<std::string> first;
    std::uint64_t rounds = 0;
    StoreCalls calls;  // the thread's requests, timed for lost()
    std::unique_ptr<Store> store;
    std::thread thread;
  };
  std::chrono::milliseconds silence_;
  std::shared_ptr<State> state_;
};

using Clock = std::chrono::steady_clock;

// A rank's environment: this process's, less what the launcher sets itself, plus torchrun's
// variables (under mpirun each rank reads Open MPI's instead), the rendezvous and the run id.
std::vector<std::string> rankEnv(const LaunchSpec& spec, int rank, int local, std::uint16_t port,
                                 const std::string& runId) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "MASTER_ADDR" || key == "MASTER_PORT" || key == "TPB_RUN_ID" || key == "GROUP_RANK" ||
        (spec.viaMpirun && key == "LD_PRELOAD"))
      continue;
    env.push_back(kv);
  }
  if (spec.viaMpirun) env.push_back("LD_PRELOAD=" + mpirunPreload());
  if (!spec.viaMpirun) {
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("WORLD_SIZE=" + std::to_string(spec.nprocPerNode * spec.nnodes));
    env.push_back("LOCAL_RANK=" + std::to_string(local));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(spec.nprocPerNode));
    env.push_back("GROUP_RANK=" + std::to_string(spec.nodeRank));
  }
  // One BLAS thread per rank: on CPU a rank stands for one device, and OpenBLAS must not
  // spread every rank over all cores (see also pinBlasThreads() in the worker).
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env.push_back("OPENBLAS_NUM_THREADS=1");
  env.push_back("MASTER_ADDR=" + spec.masterAddr);
  env.push_back("MASTER_PORT=" + std::to_string(port));
  if (spec.shareRunId) env.push_back("TPB_RUN_ID=" + runId);
  for (const auto& [k, v] : spec.extraEnv) env.push_back(k + "=" + v);
  return env;
}

// The child's side of fork: only async-signal-safe calls from here to execve.
[[noreturn]] void execRank(const char* program, char** argv, char** envp, int outFd, int errFd, pid_t parent,
                           bool viaMpirun, const cpu_set_t* core) {
  // Die with the launcher, even if it is SIGKILLed; guard against the parent having died
  // between fork and prctl.
  // mpirun gets SIGTERM, which it passes on to its ranks before it goes.
  prctl(PR_SET_PDEATHSIG, viaMpirun ? SIGTERM : SIGKILL);
  if (getppid() != parent) _exit(127);
  // Handlers reset at exec by themselves; an ignored signal stays ignored: undo both.
  for (int sig : kInterruptSignals) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  // A rank inherits stdin, stdout and stderr only, whatever a library (or our own parent)
  // left inheritable. close_range is a plain syscall, safe after fork; before Linux 5.9 it
  // fails and the close-on-exec flags alone apply.
  close_range(3, ~0U, 0);
  if (core && sched_setaffinity(0, sizeof *core, core) != 0) {
    const char msg[] = "tpbench launcher: cannot bind the rank to its core (sched_setaffinity failed)\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  execve(program, argv, envp);
  const char msg[] = "tpbench launcher: execve failed\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(127);
}

}  // namespace

std::vector<int> placementOrder() {
  const std::vector<int> mine = parseCpuList(affinityList());
  TPB_CHECK(!mine.empty(), "cannot read the launcher's affinity mask");
  std::vector<int> first, second;
  for (int cpu : mine) {
    // A CPU that is not the lowest of its core's hardware threads waits until every core has one
    // rank. Unreadable topology: every CPU counts as a core of its own.
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    std::string siblings;
    std::getline(in, siblings);
    const std::vector<int> thread = parseCpuList(siblings);
    const bool lowest = thread.empty() || *std::min_element(thread.begin(), thread.end()) >= cpu;
    (lowest ? first : second).push_back(cpu);
  }
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

namespace {

// The processes of one launch on this node (its ranks, or one mpirun), from their start until
// every one is reaped: forwards their output, and stops them all on the first failure, the
// timeout, an interrupt, another node's failure or the loss of node 0.
class RankSet {
 public:
  RankSet(const LaunchSpec& spec, LaunchResult& result, Clock::time_point t0)
      : spec_(spec), result_(result), failures_(spec), t0_(t0), nextPoll_(t0) {}

  void start(std::uint16_t port);
  void watch();
  // Fills the result's ranks, ok and error.
  void finish();

 private:
  void spawn(int local, const std::string& program, std::vector<std::string>& args, std::uint16_t port,
             pid_t parent);
  bool anyOutputOpen() const;
  void forwardOutput();
  void reap();
  void closeOutput();
  void stopAll(const std::string& why);
  void checkTimeout(Clock::time_point now);
  void checkOtherNodes(Clock::time_point now);
  void killStragglers(Clock::time_point now);

  const LaunchSpec& spec_;
  LaunchResult& result_;
  SharedFailures failures_;
  MpirunOutput mpirunOut_;
  std::vector<Child> children_;
  std::vector<int> cpus_;  // bindCores: placementOrder(), local rank r on cpus_[r % size]
  int running_ = 0;
  bool stopping_ = false;
  Clock::time_point t0_, killAt_{}, nextPoll_;
};

void RankSet::start(std::uint16_t port) {
  const std::string exe = selfExe();
  std::vector<std::string> args{exe};
  args.insert(args.end(), spec_.workerArgs.begin(), spec_.workerArgs.end());
  // viaMpirun: one child, mpirun, which starts every rank of this node itself.
  TPB_CHECK(!spec_.viaMpirun || spec_.nnodes == 1, "mpirun launches cover one node");
  if (spec_.viaMpirun) {
    // -x NAME: mpirun copies the value from its own environment, so the secret stays off its
    // command line (which every user of the host can read).
    std::vector<std::string> exported{"MASTER_ADDR", "MASTER_PORT", "OPENBLAS_NUM_THREADS", kJobSecretVar};
    if (spec_.shareRunId) exported.push_back("TPB_RUN_ID");
    // The thread level MPI_Init_thread asks for in each rank (checked before launch), named.
    if (const char* v = std::getenv("TPB_MPI_THREAD"); v && *v) exported.push_back("TPB_MPI_THREAD");
    for (const auto& kv : spec_.extraEnv) exported.push_back(kv.first);
    args = mpirunArgv(spec_.nprocPerNode, args, exported, spec_.bindCores);
  }
  const std::string program = spec_.viaMpirun ? findMpirun() : exe;
  TPB_CHECK(!program.empty(), "mpirun is not on PATH");
  if (spec_.bindCores && !spec_.viaMpirun) cpus_ = placementOrder();  // once: it reads sysfs per CPU
  children_.resize(spec_.viaMpirun ? 1 : spec_.nprocPerNode);
  const pid_t parent = getpid();
  for (int local = 0; local < static_cast<int>(children_.size()); ++local) spawn(local, program, args, port, parent);
  running_ = static_cast<int>(children_.size());
}

void RankSet::spawn(int local, const std::string& program, std::vector<std::string>& args, std::uint16_t port,
                    pid_t parent) {
  Child& c = children_[local];
  c.exit.rank = spec_.viaMpirun ? -1 : spec_.nodeRank * spec_.nprocPerNode + local;
  int outPipe[2], errPipe[2];
  TPB_CHECK_ERRNO(pipe2(outPipe, O_CLOEXEC), "pipe");
  TPB_CHECK_ERRNO(pipe2(errPipe, O_CLOEXEC), "pipe");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env = rankEnv(spec_, c.exit.rank, local, port, result_.runId);
  std::optional<cpu_set_t> core;
  if (!cpus_.empty()) {
    core.emplace();
    CPU_ZERO(&*core);
    CPU_SET(cpus_[static_cast<std::size_t>(local) % cpus_.size()], &*core);
  }
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  TPB_CHECK_ERRNO(pid, "fork");
  if (pid == 0) execRank(program.c_str(), argv.data(), envp.data(), outPipe[1], errPipe[1], parent, spec_.viaMpirun,
             core ? &*core : nullptr);
  close(outPipe[1]);
  close(errPipe[1]);
  fcntl(outPipe[0], F_SETFL, O_NONBLOCK);
  fcntl(errPipe[0], F_SETFL, O_NONBLOCK);
  c.exit.pid = pid;
  c.outFd = outPipe[0];
  c.errFd = errPipe[0];
  c.running = true;
  const std::string prefix = "[rank " + std::to_string(c.exit.rank) + "] ";
  MpirunOutput* retag = spec_.viaMpirun ? &mpirunOut_ : nullptr;
  c.out = LineForwarder{prefix, &std::cout, {}, {}, retag};
  c.err = LineForwarder{prefix, &std::cerr, {}, {}, retag};
}

void RankSet::watch() {
  while (running_ > 0 || anyOutputOpen()) {
    forwardOutput();
    // Before reaping: a signal sent to the whole process group also kills the ranks, and their
    // deaths are then the interrupt's doing, not a failure of the point.
    if (!stopping_ && gInterrupted.load()) {
      result_.interrupted = true;
      failures_.post(-1, "was interrupted (SIGINT, SIGTERM or SIGHUP)", spec_);
      stopAll("interrupted");
    }
    reap();
    if (running_ == 0) {
      closeOutput();
      break;
    }
    const auto now = Clock::now();
    checkTimeout(now);
    checkOtherNodes(now);
    killStragglers(now);
  }
}

bool RankSet::anyOutputOpen() const {
  return std::any_of(children_.begin(), children_.end(), [](const Child& c) { return c.outFd >= 0 || c.errFd >= 0; });
}

void RankSet::forwardOutput() {
  std::vector<pollfd> fds;
  for (auto& c : children_) {
    if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0});
    if (c.errFd >= 0) fds.push_back({c.errFd, POLLIN, 0});
  }
  if (!fds.empty()) poll(fds.data(), fds.size(), 20);
  for (auto& c : children_) {
    drain(c.outFd, c.out);
    drain(c.errFd, c.err);
  }
}

void RankSet::reap() {
  for (auto& c : children_) {
    if (!c.running) continue;
    int status = 0;
    const pid_t r = waitpid(c.exit.pid, &status, WNOHANG);
    if (r != c.exit.pid) continue;
    c.running = false;
    --running_;
    if (WIFSIGNALED(status)) c.exit.signal = WTERMSIG(status);
    if (WIFEXITED(status)) c.exit.exitCode = WEXITSTATUS(status);
    drain(c.outFd, c.out);  // mpirun's lines explain its exit (MpirunOutput)
    drain(c.errFd, c.err);
    c.exit.lastError = c.err.lastNonEmpty;
    const bool failed = c.exit.signal != 0 || c.exit.exitCode != 0;
    if (failed && !stopping_) {
      if (spec_.viaMpirun) {
        stopAll(mpirunOut_.describeFailure(c.exit.exitCode, c.exit.signal));
      } else {
        failures_.post(c.exit.rank, exitReason(c.exit), spec_);
        stopAll(describe(c.exit));
      }
    }
  }
}

// Children are gone; pipes may still hold output of grandchildren: don't wait for them.
void RankSet::closeOutput() {
  for (auto& c : children_) {
    drain(c.outFd, c.out);
    drain(c.errFd, c.err);
    if (c.outFd >= 0) { c.out.flush(); close(c.outFd); c.outFd = -1; }
    if (c.errFd >= 0) { c.err.flush(); close(c.errFd); c.errFd = -1; }
  }
}

void RankSet::stopAll(const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  if (result_.error.empty()) result_.error = why;
  for (auto& c : children_)
    if (c.running) {
      kill(c.exit.pid, SIGTERM);
      c.exit.killedByLauncher = true;
    }
  killAt_ = Clock::now() + spec_.grace;
}

void RankSet::checkTimeout(Clock::time_point now) {
  if (stopping_ || now - t0_ <= spec_.timeout) return;
  result_.timedOut = true;
  const std::string limit =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(spec_.timeout).count()) + " s (--timeout)";
  failures_.post(-1, "timed out after " + limit, spec_);
  stopAll("timed out after " + limit + "; ranks still running were stopped");
}

void RankSet::checkOtherNodes(Clock::time_point now) {
  // Another node's failure: stop this node's ranks within a poll period of it being posted.
  if (!stopping_ && failures_.active() && now >= nextPoll_) {
    nextPoll_ = now + std::chrono::milliseconds(100);
    if (auto first = failures_.first()) stopAll(*first);
  }
  // Node 0 lost: nothing more can be agreed with the other nodes.
  if (!result_.storeLost && failures_.active()) {
    if (auto lost = failures_.lost(spec_)) {
      result_.storeLost = true;
      result_.error.clear();
      stopAll(*lost);
      if (result_.error.empty()) result_.error = *lost;
    }
  }
}

// Ranks that outlived the grace period after SIGTERM get SIGKILL.
void RankSet::killStragglers(Clock::time_point now) {
  if (!stopping_ || now <= killAt_) return;
  for (auto& c : children_)
    if (c.running) kill(c.exit.pid, SIGKILL);
  killAt_ = now + std::chrono::hours(1);
}

void RankSet::finish() {
  for (auto& c : children_) result_.ranks.push_back(c.exit);
  result_.ok = !stopping_;
  // Every node records the point's first failure, wherever it happened.
  if (!result_.ok && !result_.interrupted && !result_.storeLost) {
    failures_.settle();
    if (auto lost = failures_.lost(spec_)) {
      result_.storeLost = true;
      result_.error = *lost;
    } else if (auto first = failures_.first()) {
      result_.error = *first;
    }
  }
  if (spec_.viaMpirun && spec_.shareRunId) {
    // Ranks that outlived mpirun (stuck before it was killed) carry this launch's run id.
    if (const int left = killRunStragglers(result_.runId); left > 0) {
      result_.ok = false;
      if (result_.error.empty()) result_.error = "mpirun exited, leaving ranks running";
      result_.error += " (" + std::to_string(left) + " rank process" + (left == 1 ? "" : "es") +
                       " left behind by mpirun were killed)";
    }
  }
}

}  // namespace


void installInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  // Ctrl-C, kill, a closed terminal or session: all end the sweep the same way.
  for (int sig : kInterruptSignals) sigaction(sig, &sa, nullptr);
  // A reader that goes away (`tpbench sweep | head`) must not kill the launcher mid-save: its
  // writes fail with EPIPE instead, which std::cout and the forwarders take as a failed write.
  signal(SIGPIPE, SIG_IGN);
}

bool interruptRequested() { return gInterrupted.load(); }


LaunchResult launch(const LaunchSpec& spec) {
  TPB_CHECK(spec.nprocPerNode >= 1 && spec.nnodes >= 1 && spec.nodeRank >= 0 &&
                spec.nodeRank < spec.nnodes,
            "bad launch layout");
  LaunchResult result;
  result.runId = spec.runId.empty() ? makeRunId() : spec.runId;
  const auto t0 = Clock::now();

  // Node 0 hosts the store for the whole launch; workers (and other nodes) connect to it. Across
  // nodes the sweep's shared store is used instead.
  std::unique_ptr<Store> store;
  std::uint16_t port = spec.sharedStore ? spec.sharedStore->port() : spec.masterPort;
  RankSet ranks(spec, result, t0);
  if (spec.nodeRank == 0 && !spec.sharedStore) {
    // One node: this launcher is the only one, so it makes the job's secret itself; its ranks
    // inherit it. Across nodes every node must be given the same one (harness/input_checks.cc).
    if (spec.nnodes == 1) makeJobSecretIfUnset();
    store = Store::serve(spec.masterAddr, spec.masterPort, spec.timeout);
    port = store->port();
  }
  TPB_CHECK(port != 0, "a launch on node " << spec.nodeRank << " needs --master_port");

  MachineWatch machine;
  machine.start(spec.nprocPerNode);
  ranks.start(port);
  ranks.watch();
  ranks.finish();
  result.machine = machine.stop();
  result.wallSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (spec.cleanup) spec.cleanup(result.runId, spec.nprocPerNode * spec.nnodes);
  return result;
}

}  // namespace tpb
