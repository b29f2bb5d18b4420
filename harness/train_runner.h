// harness/train_runner.h — `tpbench run` and `tpbench sweep`: runs training points, one launch
// each, and records them in a results file that is rewritten after every point.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record/records.h"
#include "workload/train_config.h"
#include "worker/point_sync.h"

namespace tpb {

class ExternalJob;

struct TrainPoint {
  TrainConfig cfg;
  int repeat = 0;
};

struct TrainRunOptions {
  std::vector<TrainPoint> points;
  std::string device = "cpu";
  std::string transport;  // empty: the default (shm on one node, gloo across nodes)
  std::string out;        // results file; empty: none
  std::string trace;      // --trace: the Chrome trace file (record/trace_file.h); empty: none
  bool resume = false;    // skip points the file already holds (ok or skipped)
  bool overwrite = false; // --overwrite: replace an existing results file (and trace) instead of refusing
  bool resumable = true;  // the command has --resume (sweep; run does not): what a refusal suggests
  std::chrono::seconds timeout{1800};
  std::string launcher;   // --launcher: "", "tpbench" or "mpirun" (harness/mpirun.h)
  std::string bind = "none";  // --bind: "none" or "core" (LaunchSpec::bindCores)
  std::string command;
  // Multi-node layout (torchrun's names). One node by default.
  int nnodes = 1, nodeRank = 0, nprocPerNode = 0;  // 0: the point's process count
  std::string masterAddr = "127.0.0.1";
  std::uint16_t masterPort = 0;
  std::chrono::seconds rendezvousTimeout = kDefaultRendezvousTimeout;  // ranks of a point wait this long for each other
  std::chrono::seconds heartbeatTimeout = kDefaultHeartbeatTimeout;    // several nodes: a silent rank or store fails the point
  std::string iface;                            // --iface: the interface this node's ranks bind to
  // `run`: a point that would be skipped is refused up front (exit 2), or, where that is known
  // only once the point starts (an external launcher's layout), fails the command (exit 1).
  bool everyPointMustRun = false;
  // The job this process is one rank of (torchrun, srun, mpirun; main decides it from the
  // environment); nullptr: tpbench's own launcher starts the ranks.
  ExternalJob* external = nullptr;
};

// Validates (UsageError), runs every point, prints per-epoch lines and a summary table.
// Returns 0 when every point ran or was skipped with a reason (but for everyPointMustRun), 1 if
// any failed, 130 when interrupted.
int runTraining(const TrainRunOptions& opt);

// Recomputes every run's summary.scaling_efficiency: samples/s at N divided by N times the
// samples/s of the same strategy and configuration at N = 1 (NaN, written null, when there is none).
void updateScalingEfficiency(std::vector<RunRecord>& runs);

}  // namespace tpb
