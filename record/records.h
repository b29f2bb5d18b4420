// record/records.h — the typed results model (schema "tpbench.results/2", every field in
// results/README.md) and its one JSON mapping: toJson() writes a record, fromJson() reads it
// back, checking every field's type and range and naming file and field path in a UsageError.
//
// Numbers that could not be measured are NaN in memory and null in the file (non-finite numbers
// are written as null). Members a reader does not know are kept in `extra` and written back, so
// that --resume, which rewrites files other versions wrote, drops nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/train_settings.h"
#include "record/json_in.h"
#include "record/stats.h"

namespace tpb {

constexpr const char* kResultsSchema = "tpbench.results/2";
// The schema before it, still read: its epochs' `steps` counted a step on every rank that trained
// (N for ddp, ring_all_reduce and torch_ddp, N-1 for param_server); schema 2 counts each optimizer
// step of the model once. ResultsFile::load puts a schema-1 file's steps in schema 2's meaning.
constexpr const char* kResultsSchemaV1 = "tpbench.results/1";


// "meta": where and how the file was produced. Every field is optional on read (files made by
// tools or tests may carry fewer). Absent string fields stay absent when written back; the
// "| null" fields (cpu_cores, driver, cuda, nccl) are written as null when unknown.
struct Meta {
  std::optional<std::string> tpbenchVersion, gitSha, timestampUtc, host, cpuModel;
  std::optional<long long> cpuCores;
  // Cores this process may run on (its affinity mask): what ranks actually share. And the load
  // average (1, 5, 15 min) when the command started: other work competing for those cores.
  std::optional<long long> cpusAvailable;
  std::optional<std::vector<double>> loadAverage;
  // The machine's compute speed when the command started: one thread's float32 matrix product
  // through LibTorch (harness/meta.cc: sgemmGflops), GFLOP/s. What `compare --scale_by_sgemm`
  // scales a baseline from another machine by. Absent in older files and from commands that
  // write no results.
  std::optional<double> sgemmGflops;
  std::optional<std::vector<std::string>> gpus;
  std::optional<std::string> driver, cuda, nccl;
  std::optional<std::string> libtorch, gloo, buildType, command;
  // Who started the ranks and where: "tpbench", "torchrun", "slurm" or "mpirun"; the nodes, the
  // ranks on each (absent when it varies), the host names of the nodes and the job's world size
  // (absent for tpbench's own launcher, whose points choose their own). Absent in older files.
  std::optional<std::string> launcher;
  // tpbench's own launcher: "core" (--bind core: each rank on a core of its own, and mpirun told
  // --bind-to core) or "none" (every rank free to run on every core). Absent under torchrun, srun
  // or mpirun (they place the ranks) and in older files.
  std::optional<std::string> bind;
  // The thread level tpbench's MPI calls ask MPI_Init_thread for: "funneled" (the default) or
  // "single" (TPB_MPI_THREAD=single, as IMB and OSU init). Written in every file; only the mpi
  // transport and the mpi algorithms use MPI. Absent in older files.
  std::optional<std::string> mpiThread;
  // The shm transport's single copy as TPB_SHM_SINGLE_COPY asked for it: true (the default;
  // used between ranks where the kernel lets one read another's memory) or false. Written in
  // every file; only the shm transport uses it. Absent in older files.
  std::optional<bool> shmSingleCopy;
  // TPB_RING_CHUNK_KB where it was set: the chunk of the ring and the other chunked algorithms,
  // KiB. Absent where it was not (the device's default: 512 KiB on CPU, 4 MiB on GPU) and in
  // older files.
  std::optional<long long> ringChunkKb;
  std::optional<long long> nodes, ranksPerNode, worldSize;
  std::optional<std::vector<std::string>> hosts;
  nlohmann::json extra = nlohmann::json::object();

  nlohmann::json toJson() const;
  static Meta fromJson(const JsonIn& in);
};

// runs[].config: everything that changes the work of a training point: the settings (their
// keys, ranges and when a record carries them: common/train_settings.h) and where it ran. Two
// records whose configs are equal (== compares by value: 1 == 1.0) are repeats of one point when
// their repeatIndex differs.
struct RunConfig : TrainSettings {
  std::string device, transport;
  int repeatIndex = 0;
  nlohmann::json extra = nlohmann::json::object();

  // Whether the record holds the setting `key`. Settings that a record may lack (SettingInfo::
  // Absent::Kept: absent in older files, or carried only where they apply) start absent: make()
  // or fromJson() says which are there. An absent one reads as TrainSettings' default.
  bool has(const std::string& key) const;
  void setHas(const std::string& key, bool held);

  // The record of `s` as a point of `device` and `transport`: every setting the table says a
  // record carries (`microbatched`: the strategy splits its batches, TrainStrategy::microbatched).
  static RunConfig make(const TrainSettings& s, bool microbatched, const std::string& device,
                        const std::string& transport, int repeat);
  // Micro-batches per step: the recorded number, else 1 (a strategy that does not split batches).
  int microbatchesPerStep() const { return has("microbatches") ? microbatches : 1; }

  nlohmann::json toJson() const;
  static RunConfig fromJson(const JsonIn& in);
  bool operator==(const RunConfig& o) const;
  bool operator!=(const RunConfig& o) const { return !(*this == o); }

 private:
  bool holds(const SettingInfo& info) const;
  std::vector<std::string> held_;  // the Kept settings this record holds
};

// Exact traffic over tpbench's transport, one entry per rank (index = rank): bytes and messages
// sent and received (comm/transport.h: Traffic says what counts). Recorded where everything an
// algorithm or strategy communicates goes through the transport (origin "from scratch"); absent
// elsewhere and in files older than the field. Deterministic, so `compare` holds it exactly.
struct TrafficRecord {
  std::vector<std::uint64_t> bytesSent, bytesRecv, msgsSent, msgsRecv;

  std::size_t ranks() const { return bytesSent.size(); }
  // One rank's four counts appended (the record grows by one rank).
  void add(std::uint64_t bSent, std::uint64_t bRecv, std::uint64_t mSent, std::uint64_t mRecv);
  // Element-wise sum of two records of the same rank count (epochs into a run).
  TrafficRecord& operator+=(const TrafficRecord& o);
  bool operator==(const TrafficRecord& o) const;
  bool operator!=(const TrafficRecord& o) const { return !(*this == o); }
  nlohmann::json toJson() const;
  static TrafficRecord fromJson(const JsonIn& in);
};

// runs[].epochs[].
struct EpochRecord {
  int epoch = 1;                    // 1-based
  double wallS = NAN, computeS = NAN, commS = NAN, samplesPerS = NAN;
  double trainLoss = NAN, testAccuracy = NAN;
  double evalS = NAN;               // optional on read
  std::optional<long long> steps, samples;  // absent in files older than the fields
  std::optional<TrafficRecord> traffic;       // the epoch's steps, every rank; see TrafficRecord
  // Model parallel strategies only (absent elsewhere): idle/wall per stage averaged, GPipe's
  // (S-1)/(M+S-1), and each stage's peak activation bytes.
  std::optional<double> bubbleFraction, bubbleFormula;
  std::optional<std::vector<double>> activationBytes;
  // Each rank's seconds of the epoch, in rank order (several ranks; absent in older files):
  // computing, waiting on communication, and idle, the rest of the slowest rank's wall_s.
  // And each rank's median compute per step (absent where steps are not timed on the host, and in
  // older files): one step that lost its core moves the sum, not the median. And the same median
  // on the rank's CPU clock (absent where steps are not timed there, e.g. on a GPU): time spent
  // waiting for a core moves the wall clock's, not this one.
  struct RankTimes {
    std::vector<double> computeS, commS, idleS;
    std::vector<double> stepComputeS;     // empty: absent
    std::vector<double> stepComputeCpuS;  // empty: absent; only beside stepComputeS
  };
  std::optional<RankTimes> ranks;
  nlohmann::json extra = nlohmann::json::object();

  nlohmann::json toJson() const;
  static EpochRecord fromJson(const JsonIn& in);
};

// runs[].summary.
struct RunSummary {
  double totalS = NAN, samplesPerS = NAN, finalTestAccuracy = NAN, finalTrainLoss = NAN;
  double scalingEfficiency = NAN;
  nlohmann::json extra = nlohmann::json::object();

  // Totals over `epochs` (scaling efficiency is the file's business: NaN here).
  static RunSummary of(const std::vector<EpochRecord>& epochs);
  nlohmann::json toJson() const;
  static RunSummary fromJson(const JsonIn& in);
};

// True for a colour "#rrggbb" (hex digits, either case), the only form records carry.
bool isHexColor(const std::string& s);

// What the registry of the build that wrote a record says about its strategy or algorithm
// (core/entry.h): where it comes from, its data ranks, where it sorts and its colour. Written
// beside every record so that a report drawn from any build's files needs no registry and never
// switches on names. Absent in files older than the fields.
struct EntryRecord {
  std::optional<std::string> origin;  // "from scratch", "library", "builtin-equivalent", "reference",
                                      // "reference (PyTorch)"
  std::optional<int> order;           // display order, ascending
  std::optional<std::string> color;   // "#rrggbb"
  std::optional<int> dataRanks;       // runs only: ranks that consume training data
  std::optional<std::string> referenceOf;  // a PyTorch reference: the entry rebuilding its algorithm
  // What carried the point's data: the run's transport, or the library's own ("gloo-tcp",
  // "mpi", "nccl"; core/entry.h), or "in-process" for a point of one process. `transport` keeps
  // the run's transport, which compare matches on.
  std::optional<std::string> carrier;

  void writeInto(nlohmann::json& record) const;
  static EntryRecord readFrom(const JsonIn& record);
};

// runs[].workload_cost: what the run's workload costs, from its spec (workload/network_spec.h):
// trainable parameters, their float32 gradients' bytes (what an allreduce moves per step), and per
// sample the forward and training FLOPs and the activation bytes kept for backward. Absent in
// files older than the field.
struct WorkloadCostRecord {
  double parameters = 0, gradientBytes = 0;
  double forwardFlopsPerSample = 0, trainFlopsPerSample = 0, activationBytesPerSample = 0;
  nlohmann::json toJson() const;
  static WorkloadCostRecord fromJson(const JsonIn& in);
};

// runs[].machine, allreduce[].machine: what else ran on the launcher's CPUs over the point's launch
// (harness/machine_load.h). Absent where the point's ranks were not this launcher's children (an
// external launcher), where /proc/stat could not be read, and in older files.
struct MachineRecord {
  int cores = 1, ranks = 1;   // the launcher's CPUs; the point's processes (cores it computes on)
  double othersCpuS = 0;      // CPU seconds of every other process on those CPUs
  double othersCores = 0;     // the same over the launch's wall time: cores they used on average
  bool busy = false;          // othersCores beyond the cores the ranks left free, plus a slack
  // /proc/loadavg around the launch: the 1-minute load average at its end, and the most processes
  // runnable beyond the point's own, before its ranks started or after they ended (absent in older
  // files and where /proc/loadavg cannot be read).
  std::optional<double> load1m;
  std::optional<int> othersRunnable;
  // "other processes used 1.30 of 2 cores beside 2 ranks" (the console's, compare's and report's words).
  std::string text() const;
  nlohmann::json toJson() const;
  static MachineRecord fromJson(const JsonIn& in);
};

// runs[]: one training run.
struct RunRecord {
  RunConfig config;
  std::string status = "ok";  // "ok" | "failed" | "skipped"
  std::optional<std::string> error;
  std::vector<EpochRecord> epochs;
  RunSummary summary;
  double wallS = NAN;  // launcher wall time of the whole run, start to exit
  std::optional<WorkloadCostRecord> workloadCost;
  std::optional<MachineRecord> machine;
  EntryRecord entry;
  nlohmann::json extra = nlohmann::json::object();

  bool ok() const { return status == "ok"; }
  // Why an "ok" record measured nothing ("" when it measured something): no epochs, or zero
  // optimizer steps, or zero samples. Such a run is recorded, and compared, as failed.
  std::string nothingMeasured() const;

  nlohmann::json toJson() const;
  static RunRecord fromJson(const JsonIn& in);
};

// allreduce[]: one collective benchmark point (op "allreduce" unless another collective).
// The two ways `allreduce` and `collective` time a point's iterations (--timing).
inline constexpr const char* kPerCallTiming = "per_call";
inline constexpr const char* kBackToBackTiming = "back_to_back";
inline bool isTimingMethod(const std::string& s) { return s == kPerCallTiming || s == kBackToBackTiming; }

// The element types and reductions a collective point may record (CollectiveRecord::dtype,
// redop): NCCL's, in tpbench's names. elementBytes is 0 for a name not in the list.
std::size_t elementBytes(const std::string& dtype);
inline bool isElementType(const std::string& dtype) { return elementBytes(dtype) != 0; }
std::string elementTypeNames();  // "int8, uint8, ..., float8_e5m2"
bool isReduction(const std::string& redop);
std::string reductionNames();  // "sum, prod, max, min, avg, premulsum"

// How a point's timed iterations spread (each iteration the slowest rank's time), where each was
// timed on its own: time_us' p90, p99 (nearest rank), cv (sample stddev / mean), first (the first
// timed iteration, after the warm-up) and spikes (iterations over kSpikeFactor x the median).
inline constexpr double kSpikeFactor = 1.5;
struct IterationSpread {
  double p90Us = 0, p99Us = 0, cv = 0, firstUs = 0;
  long long spikes = 0;
  // The spread of `timesUs` (at least two, in the order they ran), whose summary is `s`.
  static IterationSpread of(const std::vector<double>& timesUs, const Summary& s);
};

// Each rank's own timed iterations, where each was timed on its own: its median, and in how many
// iterations it was the slowest rank (the one whose time the iteration's is; a tie goes to the
// lowest rank, so the counts sum to the iterations). In rank order.
struct CollectiveRanks {
  std::vector<double> medianUs;
  std::vector<long long> slowestIn;
  // The core each rank was bound to (--bind core), -1 where it could run on several; empty where
  // absent (older files).
  std::vector<long long> cpu;
};

struct CollectiveRecord {
  std::string op = "allreduce";
  std::string algo, transport, device;
  std::optional<int> root;      // rooted ops (broadcast, reduce) only
  // nccl-tests' in place (true) or out of place (false); absent in files older than the field,
  // which hold in-place allreduce points only (isInPlace() says true), and kept absent on rewrite.
  std::optional<bool> inPlace;
  // The element type and the reduction, in tpbench's names ("bfloat16", "max"): absent for
  // float32 and sum, which tpbench's own points always are (and every file older than the fields).
  // Points of another type or reduction are another measurement: compare and report keep them apart.
  std::optional<std::string> dtype, redop;
  int nGpus = 1;
  std::uint64_t bytes = 0, count = 0;
  // Measured fields: absent when the point did not run to the end (measured == false).
  bool measured = false;
  double timeMedianUs = NAN, timeMinUs = NAN, timeMaxUs = NAN;
  // Absent for a mean of queued launches (cuda_events_back_to_back) and in older files.
  std::optional<IterationSpread> spread;
  // Two or more ranks, each iteration timed on its own; absent elsewhere and in older files.
  std::optional<CollectiveRanks> ranks;
  nlohmann::json timeExtra = nlohmann::json::object();  // time_us members besides those above
  double algbwGbps = NAN, busbwGbps = NAN;
  std::optional<long long> wrong;  // null when --check was off
  std::optional<std::string> timer;
  // How the iterations were timed (--timing): kPerCallTiming, each from a barrier, or
  // kBackToBackTiming, one after another. Absent in files older than the field (per call).
  std::optional<std::string> timing;
  // The thread level MPI_Query_thread gave the ranks of a point that used MPI (the mpi transport
  // or an mpi algorithm): "single", "funneled", "serialized" or "multiple". Absent otherwise.
  std::optional<std::string> mpiThread;
  std::string status = "ok";
  std::optional<std::string> error;
  int iters = 0, warmup = 0;
  std::optional<TrafficRecord> traffic;  // one call of the collective, every rank
  std::optional<MachineRecord> machine;  // over the launch that measured it (every size of it)
  EntryRecord entry;
  nlohmann::json extra = nlohmann::json::object();

  bool ok() const { return status == "ok"; }
  bool isInPlace() const { return inPlace.value_or(true); }
  std::string elementType() const { return dtype.value_or("float32"); }
  std::string reduction() const { return redop.value_or("sum"); }
  std::string timingMethod() const { return timing.value_or(kPerCallTiming); }
  // What carried its data: the recorded carrier, else (files older than the field) the transport.
  std::string carriedOver() const { return entry.carrier.value_or(transport); }
  nlohmann::json toJson() const;
  static CollectiveRecord fromJson(const JsonIn& in);
};

}  // namespace tpb
