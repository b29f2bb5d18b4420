// core/train_strategy.h — the interface of a training strategy and the entry that registers
// one. Each strategy, from scratch or library-backed, is one file in strategies/; each
// file registers itself (core/registry.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/allreduce.h"
#include "workload/train_config.h"

namespace tpb {

struct TrainStrategy : EntryInfo {
  std::vector<std::string> aliases;  // other accepted names (the seed's)
  // OS processes to launch for n devices (n, or 1 for single-process strategies).
  std::function<int(int n)> processes = [](int n) { return n; };
  // Ranks among the n that consume training data: the global batch is dataRanks(n) x batch.
  // The equivalence tests compare a strategy at (n, B) with the reference at dataRanks(n) x B.
  std::function<int(int n)> dataRanks = [](int n) { return n; };
  // True for the reference loop that every other strategy is checked against.
  bool reference = false;
  // True when it synchronises through a library allreduce chosen by TrainConfig::library
  // (--library gloo|mpi|nccl, an allreduce algorithm of origin library); others refuse --library.
  bool takesLibrary = false;
  // Empty when the strategy can run with n devices on `device`, else the reason (recorded as a
  // skip by sweeps, a usage error by `run`).
  std::function<std::string(Device device, int n)> unsupported = [](Device, int) { return std::string(); };
  // Empty when the rest of cfg suits the strategy, else the reason (the same two uses): model
  // parallel strategies need at least n layers and a --split that fits them.
  std::function<std::string(const TrainConfig& cfg)> unsupportedConfig = [](const TrainConfig&) {
    return std::string();
  };
  // True when the n devices split the model into n stages instead of each holding all of it
  // (tests deepen the MLP to n layers where it has fewer).
  bool splitsModel = false;
  // True when --microbatches and --schedule shape its work (pipeline): its records carry them,
  // other strategies' records do not.
  bool microbatched = false;
  // True when --bucket_mb shapes its work (ddp, torch_ddp): a sweep's --bucket_mb list runs it at
  // each size, other strategies once.
  bool bucketed = false;
  // True when its step honours --slow_ranks (the replicated step of workload/train.cc); the
  // others refuse the flag.
  bool slowsRanks = false;
  // Runs the whole training on this rank. ctx is the world of `processes(n)` ranks. Rank 0
  // returns the epochs and calls onEpoch; every rank returns its final parameters.
  std::function<TrainResult(CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch)> run;

  // Why n devices suit this strategy on no device ("" when one device takes them): what can be
  // refused before the device is chosen. The CPU's reason is given, as the CPU's is the
  // general one (a strategy refused there alone, such as ddp in a build without Gloo, or
  // torch_dp, is refused on the CPU once the device is known).
  std::string unsupportedAnywhere(int n) const {
    std::string cpu = unsupported(Device::Cpu, n);
    return cpu.empty() || unsupported(Device::Cuda, n).empty() ? std::string() : cpu;
  }
};

}  // namespace tpb
