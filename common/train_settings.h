// common/train_settings.h — every setting of a training point, declared once.
//
// TrainSettings holds the values; forEachSetting() is the table that says, for each of them, its
// name (the JSON key of runs[].config, the flag --name and the checkpoint's key), its flag's help,
// what a run accepts, what a results file may hold, when a record carries it and whether a
// checkpoint must agree on it. Everything that handles settings walks this table instead of
// naming fields: the flags of run and sweep (harness/cli/train_flags.cc), the checks before launch
// (harness/input_checks.cc), the record's JSON and equality (record/records.cc), the record made
// for a point and the job its ranks read (harness/train_runner.cc, worker/train_job.cc: the rank
// takes the whole TrainSettings, so it cannot miss one) and the checkpoint's check
// (workload/checkpoint.cc). tests/train_settings_test.cc walks it too: a setting added here is
// carried everywhere, or that test fails.
//
// Below every layer: no LibTorch, no transport, no registry.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace tpb {

// Ranges a results file may hold (a file is untrusted input).
constexpr long long kMaxRanks = 65536;
constexpr long long kMaxInt = 2147483647;   // batch sizes, epochs, iterations
constexpr long long kMaxCount = 1LL << 53;  // sample counts, bytes (exact in a double)

struct TrainSettings {
  std::string strategy = "single";
  int nGpus = 1;                   // ranks (CPU: processes; data_parallel: replicas)
  int batchSize = 64;              // per device (DDP's meaning)
  int epochs = 3;
  std::string dataset = "synthetic";
  std::uint64_t trainSize = 0;     // 0: the whole training set
  std::uint64_t testSize = 0;      // 0: the whole test set
  std::string hidden = "512,512";  // the MLP's hidden widths, canonical text (workload/model.h)
  std::string workload = "mlp";    // what is trained, canonical text (workload/network_spec.h)
  double lr = 0.01;
  double momentum = 0.0;
  std::uint64_t seed = 1;
  double bucketMb = 25.0;          // ddp
  std::string library;             // allreduce: the library allreduce (gloo, mpi, nccl); "": the device's
  long long maxSteps = -1;         // stop after this many optimizer steps; -1: all
  int microbatches = 4;            // pipeline: micro-batches per step
  std::string schedule = "gpipe";  // pipeline: gpipe or 1f1b (workload/stages.h)
  std::string split;               // model_parallel, pipeline: first units of stages 1..N-1 ("" balanced)
  std::string resumeFrom;          // continue from this checkpoint ("": from the seed's weights)
  std::string slowRanks;           // straggler experiment: "R:F,..." (common/slow_ranks.h); "": none
};

// A setting's value as text, as its flag takes it and a checkpoint holds it: a number in full (a
// double to 17 significant digits, so it reads back exactly), text as it is.
inline std::string settingText(const std::string& v) { return v; }
inline std::string settingText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
template <class Integer>
std::string settingText(Integer v) {
  return std::to_string(v);
}

// An interval of numbers; an open end excludes its value.
struct Bounds {
  double lo = -std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::max();
  bool loOpen = false, hiOpen = false;
  bool contains(double v) const {
    return (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
  }
};
constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct SettingInfo {
  const char* key;  // JSON key, flag name without "--", checkpoint key
  // Where its flag is declared: addTrainFlags for run and sweep alike (Shared), by each command
  // itself because sweep takes a list of values (PerCommand: the point's dimensions), or nowhere.
  enum class Flag { Shared, PerCommand } flag = Flag::Shared;
  const char* help = "";
  // What a run accepts, checked before anything is launched. Unchecked: free text, or a value
  // checked elsewhere against something outside the table (a dataset's size, the registry).
  enum class Check { Unchecked, Integer, Real, StepLimit } check = Check::Unchecked;
  Bounds accepted;
  // What runs[].config may hold for a number (text is any string).
  Bounds inFile;
  // A results file without the key: refused (Required), read as the default and written back
  // (Default), or read as absent and kept absent on rewrite (Kept; older files lack the key).
  enum class Absent { Required, Default, Kept } absent = Absent::Required;
  // When a record made for a point carries it: always, only when not empty (text), or only for a
  // strategy whose work it shapes (TrainStrategy::microbatched), so other strategies' configs,
  // and the slices reports make of them, do not vary with it.
  enum class Recorded { Always, WhenSet, WhenMicrobatched } recorded = Recorded::Always;
  bool checkpointed = false;  // a checkpoint written with another value is refused
};

// Calls visit(info, field...) for every setting, with that setting's field of each of `s`
// (TrainSettings or a type derived from it, const or not: two of them to compare or copy one).
template <class Visit, class... Settings>
void forEachSetting(Visit&& visit, Settings&... s) {
  using I = SettingInfo;
  constexpr double kMax = std::numeric_limits<double>::max();
  constexpr double kLongMax = static_cast<double>(std::numeric_limits<long long>::max());
  const Bounds any{};
  const Bounds positive{0, kUnbounded, true, true};
  const Bounds atLeastOne{1, kUnbounded};
  const Bounds count{0, static_cast<double>(kMaxCount)};
  const Bounds fileInt{1, static_cast<double>(kMaxInt)};
  visit(I{"strategy", I::Flag::PerCommand, "", I::Check::Unchecked, any, any, I::Absent::Required,
          I::Recorded::Always, true},
        s.strategy...);
  visit(I{"n_gpus", I::Flag::PerCommand, "", I::Check::Integer, {1, 64}, {1, static_cast<double>(kMaxRanks)},
          I::Absent::Required, I::Recorded::Always, true},
        s.nGpus...);
  visit(I{"batch_size", I::Flag::PerCommand, "", I::Check::Integer, atLeastOne, fileInt, I::Absent::Required,
          I::Recorded::Always, true},
        s.batchSize...);
  visit(I{"epochs", I::Flag::Shared, "Epochs per run", I::Check::Integer, atLeastOne, fileInt, I::Absent::Required,
          I::Recorded::Always, false},
        s.epochs...);
  visit(I{"dataset", I::Flag::Shared, "synthetic (MNIST-shaped, generated) or mnist:DIR (IDX files, plain or .gz)",
          I::Check::Unchecked, any, any, I::Absent::Required, I::Recorded::Always, true},
        s.dataset...);
  visit(I{"train_size", I::Flag::PerCommand, "", I::Check::Unchecked, any, count, I::Absent::Required,
          I::Recorded::Always, true},
        s.trainSize...);
  visit(I{"test_size", I::Flag::Shared, "Evaluate on the first K test samples (0: all; at most the test set's size)",
          I::Check::Unchecked, any, count, I::Absent::Kept, I::Recorded::Always, false},
        s.testSize...);
  visit(I{"hidden", I::Flag::Shared, "Hidden layer widths of the MLP 784-...-10", I::Check::Unchecked, any, any,
          I::Absent::Required, I::Recorded::Always, true},
        s.hidden...);
  visit(I{"workload", I::Flag::PerCommand, "", I::Check::Unchecked, any, any, I::Absent::Default,
          I::Recorded::Always, true},
        s.workload...);
  visit(I{"lr", I::Flag::Shared, "SGD learning rate", I::Check::Real, positive, {-kMax, kMax}, I::Absent::Required,
          I::Recorded::Always, true},
        s.lr...);
  visit(I{"momentum", I::Flag::Shared, "SGD momentum", I::Check::Real, {0, 1, false, true}, {0, 1e6},
          I::Absent::Kept, I::Recorded::Always, true},
        s.momentum...);
  visit(I{"bucket_mb", I::Flag::PerCommand, "", I::Check::Real, {0, 1e9, true, false}, {0, 1e9},
          I::Absent::Kept, I::Recorded::Always, false},
        s.bucketMb...);
  visit(I{"seed", I::Flag::Shared, "Seed of weights, data and sample order", I::Check::Unchecked, any,
          {0, kUnbounded}, I::Absent::Required, I::Recorded::Always, true},
        s.seed...);
  visit(I{"max_steps", I::Flag::Shared, "Stop each run after this many optimizer steps (-1: no limit; 0 is refused)",
          I::Check::StepLimit, any, {-1, kLongMax}, I::Absent::Default, I::Recorded::Always, false},
        s.maxSteps...);
  visit(I{"library", I::Flag::Shared,
          "allreduce strategy: the library allreduce that averages the gradients: gloo, mpi (ranks started "
          "by mpirun) or nccl (default: the device's, gloo on cpu and nccl on cuda)",
          I::Check::Unchecked, any, any, I::Absent::Kept, I::Recorded::WhenSet, false},
        s.library...);
  visit(I{"microbatches", I::Flag::Shared, "pipeline: micro-batches per step (each batch split into M)",
          I::Check::Integer, {1, 1 << 20}, fileInt, I::Absent::Kept, I::Recorded::WhenMicrobatched, true},
        s.microbatches...);
  visit(I{"schedule", I::Flag::Shared,
          "pipeline: gpipe (all forwards, then all backwards, one step) or 1f1b (one forward, one "
          "backward in turn after warm-up)",
          I::Check::Unchecked, any, any, I::Absent::Kept, I::Recorded::WhenMicrobatched, true},
        s.schedule...);
  visit(I{"split", I::Flag::Shared,
          "model_parallel, pipeline: the first unit of stages 1..N-1, e.g. 2,3 (units numbered from 0: "
          "the MLP's layers, a network's blocks; default: balanced by parameter count for the MLP, by "
          "forward FLOPs for a network)",
          I::Check::Unchecked, any, any, I::Absent::Kept, I::Recorded::WhenSet, true},
        s.split...);
  visit(I{"resume_from", I::Flag::Shared,
          "Continue from this checkpoint: its weights, momentum, epoch and sample order (its settings "
          "must equal this run's)",
          I::Check::Unchecked, any, any, I::Absent::Kept, I::Recorded::WhenSet, false},
        s.resumeFrom...);
  visit(I{"slow_ranks", I::Flag::Shared,
          "ddp, ring_all_reduce, allreduce: a straggler experiment, RANK:FACTOR[,RANK:FACTOR] (e.g. 1:1.5): "
          "that rank's compute takes FACTOR times as long in every step (it waits out the difference)",
          I::Check::Unchecked, any, any, I::Absent::Kept, I::Recorded::WhenSet, false},
        s.slowRanks...);
}

}  // namespace tpb
