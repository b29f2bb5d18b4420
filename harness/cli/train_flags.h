// harness/cli/train_flags.h — the flags `run` and `sweep` share, and their conversion into a
// TrainConfig (no logic beyond parsing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/train_runner.h"
#include "worker/point_sync.h"

namespace tpb::cli {

// The settings of common/train_settings.h (their flags come from its table; the point's
// dimensions strategy, n_gpus, batch_size and train_size are declared by run and sweep, which
// take one value or a list) and the launcher's options.
struct TrainFlags : TrainSettings {
  std::string device = "cpu", transport, out, launcher, trace, bind = "none";
  int timeout = 1800;
  // Layout over several nodes (torchrun's names) and how the nodes meet.
  int nnodes = 1, nodeRank = 0, nprocPerNode = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  int rendezvousTimeout = static_cast<int>(kDefaultRendezvousTimeout.count());
  int heartbeatTimeout = static_cast<int>(kDefaultHeartbeatTimeout.count());
  std::string iface, secretFile;
  std::string saveDir;
  bool overwrite = false;
};

void addTrainFlags(CLI::App* cmd, TrainFlags& f);
// Every registered strategy by name, with its aliases: "single, ..., ddp (or
// ring_all_reduce_builtin), ..." for the help of --strategy and --strategies.
std::string strategyChoices();
// --workload's help (run's and sweep's), and its value checked and spelled as records keep it
// (UsageError naming --workload otherwise).
std::string workloadHelp();
std::string canonicalWorkload(const std::string& text, const std::string& hidden);
// Fills everything but strategy, n_gpus, batch_size and train_size (and, for sweep, workload and
// bucket_mb, which take a list there); checkTrainRun checks it.
TrainConfig baseConfig(const TrainFlags& f);
// Copies the shared launcher options (device, transport, out, timeout, layout) into `o`, after
// the checks only the CLI can make (flags given empty, the port's range, the interface). With
// o.external set the job's launcher made the layout: the layout flags are checked against it.
void applyRunOptions(CLI::App* cmd, const TrainFlags& f, TrainRunOptions& o);

}  // namespace tpb::cli
