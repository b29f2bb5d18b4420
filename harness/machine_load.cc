#include "harness/machine_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/cores.h"

namespace tpb {

MachineRecord machineRecordOf(MachineLoad m, int ranks) {
  m.ranks = ranks > 0 ? ranks : 1;
  MachineRecord r;
  r.cores = m.cores > 0 ? m.cores : 1;
  r.ranks = m.ranks;
  r.othersCpuS = m.othersCpuS;
  // Ticks and rusage are not one clock: a few per cent past the mask's cores is rounding.
  r.othersCores = std::min(m.othersCores(), static_cast<double>(r.cores));
  r.busy = m.busy();
  if (m.load1m >= 0) r.load1m = m.load1m;
  if (m.othersRunnable >= 0) r.othersRunnable = m.othersRunnable;
  return r;
}

bool parseLoadavg(const std::string& text, double& load1m, int& runnable) {
  double l5 = 0, l15 = 0;
  int running = 0, total = 0;
  char slash = 0;
  std::istringstream in(text);
  in >> load1m >> l5 >> l15 >> running >> slash >> total;
  if (!in || slash != '/' || !(load1m >= 0) || running < 0 || total < running) return false;
  runnable = running;
  return true;
}

double cpusBusySeconds(const std::string& procStat, const std::vector<int>& cpus, double ticksPerS) {
  if (cpus.empty() || !(ticksPerS > 0)) return -1;
  std::istringstream in(procStat);
  std::string line;
  double ticks = 0;
  std::size_t found = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    long cpu = -1;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    unsigned long long v[8] = {};
    fields >> cpu;
    for (auto& x : v) fields >> x;
    if (!fields) return -1;
    for (int c : cpus)
      if (c == cpu) {
        ticks += static_cast<double>(v[0] + v[1] + v[2] + v[7]);
        ++found;
      }
  }
  return found == cpus.size() ? ticks / ticksPerS : -1;
}

MachineWatch::Reading MachineWatch::read(const std::vector<int>& cpus) {
  Reading r;
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  r.cpusBusyS = cpusBusySeconds(text.str(), cpus, static_cast<double>(sysconf(_SC_CLK_TCK)));
  std::ifstream avg("/proc/loadavg");
  std::stringstream avgText;
  avgText << avg.rdbuf();
  double load = 0;
  int running = 0;
  if (parseLoadavg(avgText.str(), load, running)) r.load1m = load, r.runnable = running > 0 ? running - 1 : 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (getrusage(who, &u) != 0) continue;
    r.ownS += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return r;
}

namespace {
double nowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void MachineWatch::start(int ranks) {
  cpus_ = parseCpuList(affinityList());
  ranks_ = ranks;
  startWall_ = nowS();
  start_ = read(cpus_);
}

std::optional<MachineLoad> MachineWatch::stop() {
  const Reading end = read(cpus_);
  if (start_.cpusBusyS < 0 || end.cpusBusyS < 0) return std::nullopt;
  MachineLoad m;
  m.cores = static_cast<int>(cpus_.size());
  m.ranks = ranks_;
  m.wallS = nowS() - startWall_;
  const double others = (end.cpusBusyS - start_.cpusBusyS) - (end.ownS - start_.ownS);
  m.othersCpuS = others > 0 ? others : 0;
  m.load1m = end.load1m;
  m.othersRunnable = std::max(start_.runnable, end.runnable);
  return m;
}

}  // namespace tpb
