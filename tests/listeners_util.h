// tests/listeners_util.h — which TCP addresses a process and everything it started listen on,
// read from /proc while it runs: the process tree from /proc/PID/stat, its sockets' inodes from
// /proc/PID/fd, and the listening sockets (state 0A) from /proc/net/tcp and /proc/net/tcp6.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace tpb::test {

// The whole of a /proc file, "" when it cannot be read. Plain read(2): a process that exits while
// its /proc files are read makes read fail with ESRCH, which std::ifstream turns into a thrown
// std::ios_base::failure (libstdc++'s filebuf), not an empty stream.
inline std::string readProc(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

// `root` and its descendants, alive now.
inline std::set<int> processTree(int root) {
  std::set<int> tree{root};
  std::multimap<int, int> children;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const int pid = std::atoi(e->d_name);
      if (pid <= 0) continue;
      const std::string stat = readProc("/proc/" + std::string(e->d_name) + "/stat");
      const auto close = stat.rfind(')');  // the name may hold spaces and parentheses
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 2));
      char state = 0;
      int ppid = 0;
      rest >> state >> ppid;
      children.emplace(ppid, pid);
    }
    closedir(d);
  }
  for (std::set<int> frontier{root}; !frontier.empty();) {
    std::set<int> next;
    for (int p : frontier)
      for (auto [it, end] = children.equal_range(p); it != end; ++it)
        if (tree.insert(it->second).second) next.insert(it->second);
    frontier.swap(next);
  }
  return tree;
}

inline std::set<std::string> socketInodes(const std::set<int>& pids) {
  std::set<std::string> inodes;
  for (int pid : pids) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      char target[128] = {};
      const ssize_t n = readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
      const std::string t(target, n > 0 ? static_cast<std::size_t>(n) : 0);
      if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  return inodes;
}

// "ADDR:PORT" of a /proc/net/tcp{,6} local address (kernel words in host order), and whether
// it is loopback (127/8, ::1, or ::ffff:127/8).
inline std::string procAddress(const std::string& field, bool& loopback) {
  const std::string hexAddr = field.substr(0, field.find(':'));
  const std::string port = std::to_string(std::stoul(field.substr(field.find(':') + 1), nullptr, 16));
  unsigned char raw[16] = {};
  for (std::size_t w = 0; w * 8 < hexAddr.size(); ++w) {
    const std::uint32_t word = static_cast<std::uint32_t>(std::stoul(hexAddr.substr(w * 8, 8), nullptr, 16));
    std::memcpy(raw + 4 * w, &word, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (hexAddr.size() == 8) {
    loopback = raw[0] == 127;
    inet_ntop(AF_INET, raw, text, sizeof text);
    return std::string(text) + ":" + port;
  }
  in6_addr a;
  std::memcpy(&a, raw, 16);
  loopback = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && raw[12] == 127);
  inet_ntop(AF_INET6, raw, text, sizeof text);
  return "[" + std::string(text) + "]:" + port;
}

struct Listeners {
  std::set<std::string> loopback, other;  // "ADDR:PORT"
};

// Adds what the tree of `root` listens on now to `seen` (as root's network namespace sees it).
inline void addListeners(int root, Listeners& seen) {
  const std::set<std::string> inodes = socketInodes(processTree(root));
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream in(readProc("/proc/" + std::to_string(root) + table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;
      bool lo = false;
      const std::string addr = procAddress(local, lo);
      (lo ? seen.loopback : seen.other).insert(addr);
    }
  }
}

// For runCli's duringRun: samples the run's listeners every few milliseconds until it ends.
inline auto sampleListeners(Listeners& seen) {
  return [&seen](pid_t pid, const std::atomic<bool>& done, const auto&) {
    while (!done) {
      addListeners(pid, seen);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
}

}  // namespace tpb::test
