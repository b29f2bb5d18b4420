// harness/machine_load.h — what else the machine did while a point ran. A point's timings are only
// as good as the cores its ranks had: another process that ran beside them (a build, a second
// benchmark, a VM neighbour's steal) moves every timing, and nothing in the timings says so.
//
// Over a point's launch (start to the last rank's exit) the launcher reads the CPU time spent on
// the CPUs of its affinity mask (/proc/stat's per-CPU user, nice, system and steal) and the CPU
// time of itself and the processes it waited for (getrusage: its ranks, their children); what is
// left is the other processes' (and a hypervisor's steal). Interrupt time is left out, since the
// kernel charges loopback traffic's softirqs to whichever CPU handles them. The point was busy when
// the others used more of the cores than its ranks left free, by more than kBusySlackCores.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "record/records.h"

namespace tpb {

// Average cores other processes may use beside a point before it counts as busy: the launcher's
// own polling, kernel threads and /proc/stat's 10 ms ticks stay below it on an idle machine.
inline constexpr double kBusySlackCores = 0.25;

struct MachineLoad {
  int cores = 0;            // CPUs in the launcher's affinity mask (the ranks' too)
  int ranks = 0;            // the point's processes on this node (each computes on one core)
  double wallS = 0;         // the launch, start to the last exit
  double othersCpuS = 0;    // CPU seconds of everything else on those CPUs over it
  double load1m = -1;       // /proc/loadavg's 1-minute average at the end; -1 where unread
  int othersRunnable = -1;  // the most runnable processes besides the launcher, at start or end; -1 where unread
  double othersCores() const { return wallS > 0 ? othersCpuS / wallS : 0; }
  // Cores the point's ranks leave free (at least 0): others up to this much take nothing from it.
  double freeCores() const { return cores > ranks ? cores - ranks : 0; }
  bool busy() const { return othersCores() > freeCores() + kBusySlackCores; }
};

// Reads the two clocks at start() and again at stop(); nullopt from stop() where /proc/stat or
// the mask cannot be read (not Linux, a /proc without per-CPU lines).
class MachineWatch {
 public:
  void start(int ranks);
  std::optional<MachineLoad> stop();

 private:
  struct Reading {
    double cpusBusyS = -1, ownS = 0;
    double load1m = -1;
    int runnable = -1;  // besides the reader
  };
  static Reading read(const std::vector<int>& cpus);
  std::vector<int> cpus_;
  int ranks_ = 0;
  Reading start_;
  double startWall_ = 0;
};

// The record of `m` for a point whose computation ran on `ranks` cores of this node (its processes,
// or a one-process strategy's replicas).
MachineRecord machineRecordOf(MachineLoad m, int ranks);

// From a /proc/loadavg text ("0.52 0.58 0.59 3/345 12345"): the 1-minute load average and the
// processes runnable now (the reader among them); false where the text is not of that form.
bool parseLoadavg(const std::string& text, double& load1m, int& runnable);

// The busy seconds of `cpus` in a /proc/stat text: each "cpuN" line's user + nice + system + steal
// ticks over `ticksPerS`; -1 where a CPU's line is missing or malformed. Exposed for the tests.
double cpusBusySeconds(const std::string& procStat, const std::vector<int>& cpus, double ticksPerS);

}  // namespace tpb
