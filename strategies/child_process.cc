#include "strategies/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>

#include "common/error.h"

extern char** environ;

namespace tpb {

namespace {

constexpr int kReportFd = 3;

// One pipe end the parent reads, split into lines.
struct Reader {
  int fd = -1;
  std::string partial;
  std::function<void(const std::string&)> onLine;

  // Reads what is there; false once the pipe is closed (the rest was delivered).
  bool drain() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        partial.append(buf, static_cast<std::size_t>(n));
        std::size_t start = 0, nl;
        while ((nl = partial.find('\n', start)) != std::string::npos) {
          onLine(partial.substr(start, nl - start));
          start = nl + 1;
        }
        partial.erase(0, start);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (!partial.empty()) onLine(partial);
      partial.clear();
      ::close(fd);
      fd = -1;
      return false;
    }
  }
};

// Kills and reaps the child unless it was reaped already: no exit path leaves it running.
struct Reaper {
  pid_t pid = -1;
  int status = 0;
  ~Reaper() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  void wait() {
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) TPB_THROW(Error, "waitpid(" << pid << "): " << std::strerror(errno));
    }
    pid = -1;
  }
};

}  // namespace

std::string ChildExit::describe() const {
  std::string s;
  if (timedOut) {
    s = "timed out and was killed";
  } else if (signal) {
    s = "was killed by signal " + std::to_string(signal) + " (SIG" + (sigabbrev_np(signal) ? sigabbrev_np(signal) : "?") + ")";
  } else {
    s = "exited with code " + std::to_string(exitCode);
  }
  return lastError.empty() ? s : s + ": " + lastError;
}

ChildExit runChild(const ChildRun& run) {
  TPB_CHECK(!run.argv.empty(), "runChild: no program");
  if (::access(run.argv[0].c_str(), X_OK) != 0)
    TPB_THROW(Error, run.argv[0] << " cannot be run: " << std::strerror(errno));

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('=') + 1);
    bool replaced = false;
    for (const auto& mine : run.env) replaced = replaced || mine.compare(0, key.size(), key) == 0;
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), run.env.begin(), run.env.end());
  std::vector<std::string> args = run.argv;
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int report[2], err[2];
  TPB_CHECK_ERRNO(::pipe2(report, O_CLOEXEC), "pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    TPB_THROW(Error, "pipe: " << std::strerror(e));
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Die with the rank (the thread that forked, in fact: runChild waits on that thread).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(err[1], STDERR_FILENO);
    // dup2 onto itself keeps close-on-exec set: clear it by hand then.
    if (report[1] == kReportFd) {
      ::fcntl(kReportFd, F_SETFD, 0);
    } else {
      ::dup2(report[1], kReportFd);
    }
    ::close_range(kReportFd + 1, ~0U, 0);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "execve failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  const int forkErrno = errno;
  ::close(report[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(report[0]);
    ::close(err[0]);
    TPB_THROW(Error, "fork: " << std::strerror(forkErrno));
  }
  Reaper reaper{pid};
  ChildExit out;
  Reader rep{report[0], {}, run.onReport};
  Reader errs{err[0], {}, [&](const std::string& line) {
                if (run.forwardStderr) std::cerr << line << std::endl;
                if (line.find_first_not_of(" \t\r") != std::string::npos) out.lastError = line;
              }};
  struct Closer {
    Reader &a, &b;
    ~Closer() {
      for (Reader* r : {&a, &b})
        if (r->fd >= 0) ::close(r->fd);
    }
  } closer{rep, errs};
  ::fcntl(rep.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(errs.fd, F_SETFL, O_NONBLOCK);

  const auto start = std::chrono::steady_clock::now();
  while (rep.fd >= 0 || errs.fd >= 0) {
    std::vector<pollfd> fds;
    for (const Reader* r : {&rep, &errs})
      if (r->fd >= 0) fds.push_back({r->fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    if (rep.fd >= 0) rep.drain();
    if (errs.fd >= 0) errs.drain();
    if (run.limit.count() > 0 && !out.timedOut && std::chrono::steady_clock::now() - start > run.limit) {
      out.timedOut = true;
      ::kill(pid, SIGKILL);  // its pipes close with it
    }
  }
  reaper.wait();
  if (WIFEXITED(reaper.status)) out.exitCode = WEXITSTATUS(reaper.status);
  if (WIFSIGNALED(reaper.status)) out.signal = WTERMSIG(reaper.status);
  return out;
}

}  // namespace tpb
