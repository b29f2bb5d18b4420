// report/gnuplot.cc — see gnuplot.h.
#include "report/gnuplot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

namespace tpb::report {

namespace {

// gnuplot echoes the failing command and a caret before its message; the message line is the
// one naming the script ("x.gp" line 12: ...). Fall back to the first non-blank line.
std::string firstErrorLine(const std::string& err) {
  std::istringstream in(err);
  std::string line, first;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t^");
    if (b == std::string::npos) continue;
    const std::string trimmed = line.substr(b);
    if (first.empty()) first = trimmed;
    if (trimmed[0] == '"' && trimmed.find("\" line ") != std::string::npos) return trimmed;
  }
  return first;
}

}  // namespace

std::string findGnuplot(const std::string& name) {
  if (name.empty()) return "";
  // Absolute, because gnuplot runs in another directory (runGnuplot's `dir`) than the one a
  // relative name was checked in: what was checked is exactly what runs.
  auto usable = [](const std::string& candidate) -> std::string {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(candidate.c_str(), X_OK) != 0)
      return "";
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(candidate, ec);
    return ec ? "" : abs.string();
  };
  if (name.find('/') != std::string::npos) return usable(name);
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (std::string found = usable((dir.empty() ? "." : dir) + "/" + name); !found.empty()) return found;
  }
  return "";
}

std::string runGnuplot(const std::string& bin, const std::string& dir, const std::string& script) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> argv = {const_cast<char*>(bin.c_str()), const_cast<char*>(script.c_str()),
                             nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return std::string("fork: ") + std::strerror(err);
  }
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    // stdin at EOF: a stray `pause` in a restyled script cannot wait for a key.
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(fds[1], 2) < 0 ||
        ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::execv(argv[0], argv.data());
    const char msg[] = "cannot execute gnuplot\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string err;
  char buf[4096];
  // A hung gnuplot must not hang the report: give each chart two minutes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool killed = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (err.size() < (1 << 20)) err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return "gnuplot took longer than 120 s and was stopped";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string line = firstErrorLine(err);
  if (line.empty()) {
    line = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                             : "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "gnuplot failed: " + line;
}

}  // namespace tpb::report
