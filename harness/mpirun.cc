#include "harness/mpirun.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/text_escape.h"

namespace tpb {

void checkLauncherFlag(const std::string& launcher) {
  if (launcher.empty() || launcher == "tpbench" || launcher == "mpirun") return;
  TPB_THROW(UsageError, "--launcher: unknown launcher '" << launcher << "' (choose tpbench or mpirun)");
}

bool checkBindFlag(const std::string& bind, bool external) {
  if (bind != "none" && bind != "core")
    TPB_THROW(UsageError, "--bind: unknown placement '" << printable(bind) << "' (choose none or core)");
  if (bind == "core" && external)
    TPB_THROW(UsageError, "--bind core: the job's launcher placed its ranks; bind them there (mpirun --bind-to "
                          "core, srun --cpu-bind=cores, or taskset under torchrun)");
  return bind == "core";
}

std::string mpirunProblem() {
  static const std::string problem = [] {
    // Only mpirun's own words come back; its stdin is closed so it can never wait for input.
    FILE* p = popen("mpirun --version 2>&1 </dev/null", "re");
    if (!p) return std::string("cannot run mpirun --version");
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    const int status = pclose(p);
    if (out.find("Open MPI") != std::string::npos) return std::string();
    if (status != 0 && out.find("not found") != std::string::npos)
      return std::string("mpirun is not on PATH (install openmpi-bin)");
    std::string first = out.substr(0, out.find('\n'));
    return "mpirun on PATH is not Open MPI's (it says '" + first + "'); --launcher mpirun needs Open MPI";
  }();
  return problem;
}

bool chooseMpirun(const std::string& flag, const std::string& needsMpi, int nnodes) {
  checkLauncherFlag(flag);
  const bool mpirun = flag == "mpirun" || (flag.empty() && !needsMpi.empty());
  if (!mpirun) {
    if (!needsMpi.empty())
      TPB_THROW(UsageError, "--launcher tpbench: " << needsMpi
                                                   << " needs ranks started by mpirun (use --launcher mpirun, or leave "
                                                      "--launcher out)");
    return false;
  }
  const std::string who = flag == "mpirun" ? std::string("--launcher mpirun") : needsMpi;
  if (nnodes > 1)
    TPB_THROW(UsageError, who << ": tpbench starts mpirun on one node only; over several nodes start tpbench "
                                 "itself under mpirun");
  if (std::string why = mpirunProblem(); !why.empty()) TPB_THROW(UsageError, who << ": " << why);
  if (loopbackShim().empty())
    TPB_THROW(UsageError, who << ": " << kLoopbackShim << " is missing beside tpbench (build it with tpbench): "
                              << "without it mpirun would listen on every interface of this host");
  return true;
}

std::string loopbackShim() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  path = path.substr(0, path.rfind('/') + 1) + kLoopbackShim;
  return access(path.c_str(), R_OK) == 0 ? path : std::string();
}

std::string mpirunPreload() {
  const char* before = std::getenv("LD_PRELOAD");
  const std::string shim = loopbackShim();
  return before && *before ? shim + ":" + before : shim;
}

std::string findMpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/mpirun";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::vector<std::string> mpirunArgv(int np, const std::vector<std::string>& program,
                                    const std::vector<std::string>& exportVars, bool bindCores) {
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(np)};
  // Open MPI refuses root without this; containers and CI runners often are root.
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  // N ranks on fewer cores is what "GPU count" means on a CPU node.
  argv.push_back("--oversubscribe");
  // Placed as tpbench's own launcher places them (LaunchSpec::bindCores), not by Open MPI's
  // default (a core each up to two ranks, a socket each beyond).
  if (bindCores) argv.insert(argv.end(), {"--map-by", "core"});
  argv.push_back("--bind-to");
  argv.push_back(bindCores ? "core:overload-allowed" : "none");
  argv.push_back("--tag-output");
  // A rank reads no input; mpirun would otherwise forward the launcher's stdin to rank 0.
  argv.push_back("--stdin");
  argv.push_back("none");
  // One host: the ranks talk through shared memory, not the tcp BTL (whose listeners bind the
  // wildcard address whatever btl_tcp_if_include says), and mpirun's out-of-band channel names
  // loopback; its listener's wildcard bind is made a loopback one by mpirunPreload().
  argv.insert(argv.end(), {"--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "127.0.0.1/8"});
  for (const auto& v : exportVars) {
    argv.push_back("-x");
    argv.push_back(v);
  }
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

namespace {

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return std::string("SIG") + (abbrev ? abbrev : "?");
}

}  // namespace

std::string MpirunOutput::retag(const std::string& line) {
  static const std::regex tagged(R"(^\[\d+,(\d+)\]<(stdout|stderr|stddiag)>:(.*)$)");
  static const std::regex noticed(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  static const std::regex processName(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex exitCode(R"(Exit code:\s*(\d+))");
  std::smatch m;
  if (std::regex_match(line, m, tagged)) {
    const std::string text = m[3].str();
    if (text.rfind("error: ", 0) == 0) {
      const std::string described = "rank " + m[1].str() + ": " + text;
      rankError_.emplace(std::atoi(m[1].str().c_str()), described);
      if (firstRankError_.empty()) firstRankError_ = described;
    }
    return "[rank " + m[1].str() + "] " + text;
  }
  if (std::regex_search(line, m, noticed) && signalled_.empty()) {
    const int sig = std::atoi(m[2].str().c_str());
    signalled_ = "rank " + m[1].str() + " was killed by signal " + m[2].str() + " (" + signalName(sig) + ")";
  } else if (std::regex_search(line, m, processName) && exitedRank_ < 0) {
    exitedRank_ = std::atoi(m[1].str().c_str());
  } else if (std::regex_search(line, m, exitCode) && exitedCode_.empty()) {
    exitedCode_ = m[1].str();
  }
  if (line.find_first_not_of("- \t\r") != std::string::npos) lastOwnLine_ = line;
  return "[mpirun] " + line;
}

std::string MpirunOutput::describeFailure(int exitCode, int signal) const {
  if (!signalled_.empty()) return signalled_ + " (reported by mpirun)";
  if (exitedRank_ >= 0) {
    if (const auto it = rankError_.find(exitedRank_); it != rankError_.end()) return it->second;
    if (!exitedCode_.empty())
      return "rank " + std::to_string(exitedRank_) + " exited with code " + exitedCode_ + " (reported by mpirun)";
  }
  if (!firstRankError_.empty()) return firstRankError_;
  std::string s = signal ? "mpirun was killed by signal " + std::to_string(signal) + " (" + signalName(signal) + ")"
                         : "mpirun exited with code " + std::to_string(exitCode);
  if (!lastOwnLine_.empty()) s += ": " + lastOwnLine_;
  return s;
}

int killRunStragglers(const std::string& runId) {
  if (runId.empty()) return 0;
  const std::string needle = std::string("TPB_RUN_ID=") + runId;
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    if (!in) continue;  // gone, or another user's
    std::stringstream env;
    env << in.rdbuf();
    const std::string text = '\0' + env.str() + '\0';
    if (text.find('\0' + needle + '\0') != std::string::npos) found.push_back(pid);
  }
  closedir(d);
  for (pid_t pid : found) kill(pid, SIGKILL);
  // They are not our children (mpirun's, now init's): wait until /proc no longer shows them.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t pid : found) {
    while (kill(pid, 0) == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return static_cast<int>(found.size());
}

}  // namespace tpb
