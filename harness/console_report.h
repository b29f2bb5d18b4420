// harness/console_report.h — what the launching commands print on the terminal, in one place
// (google/benchmark's ConsoleReporter beside its JSON writer): the runners decide what happened
// and record it in the results file (record/results.h); these classes only say it. Tables and
// per-point results go to stdout, progress and problems to stderr, as before: scripts and tests
// read both, so the text is a contract.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

struct CollectiveRecord;
struct SummaryTable;

// The point driver's progress line on stderr: "[k/total] <what>", then for a launched point the
// time elapsed and its ETA; and, before launch, a warning line when its ranks outnumber the cores
// this process may run on (they take turns, so its times include waiting for one).
struct ProgressLine {
  std::size_t k = 0, total = 0;
  std::string what;
  std::optional<double> etaS;  // none before the first launch, and for a point not launched
  int ranks = 0;               // this node's ranks of the point; 0: not launched here
  unsigned cores = 0;          // cores available here (harness/meta.h); 0: unknown
  std::optional<double> elapsedS;  // since the command started; none for a point not launched
};
void printProgress(const ProgressLine& line);

// Where a command's outputs went, once its points are done: `results` empty when it wrote no
// results file; `tracePoints` 0 when the trace holds nothing (or there is none).
void printOutputsWritten(const std::string& results, const std::string& trace, std::size_t tracePoints);

// One row of the summary table of `run` and `sweep`.
struct TrainRow {
  std::string strategy;
  int n = 0, batch = 0;
  std::size_t trainSize = 0;
  std::string status;         // ok, failed or skipped (then the numbers are "-")
  double samplesPerS = 0;
  double testAccuracy = -1;   // a fraction; negative: none measured ("n/a")
  double trainS = 0;
  std::string point;          // the configuration without its repeat: rows with the same are repeats
  std::string workload = "mlp";  // --workload's canonical text
  double bucketMb = -1;          // a bucketed strategy's --bucket_mb; negative for the others
  std::string straggler;         // record/stragglers.h, as text; "" when no rank held the run back
  std::string coreWait;          // record/stragglers.h's coreWaitText; "" when no rank waited for a core
  std::string busy;              // harness/machine_load.h's text where the machine was busy beside it
  std::string why;               // a skipped row's reason
  bool saved = false;            // read from the results file (--resume), not run by this command
};

// `run` and `sweep`: a line per failed point, the other nodes' line per point, the summary table.
class TrainConsole {
 public:
  void pointFailed(const std::string& strategy, int n, const std::string& error) const;
  // Another node than 0, under tpbench's own launcher: its own ranks of the point (perNode of
  // them) finished.
  void nodeOk(const std::string& strategy, int n, int batch, int node, int perNode, double wallS) const;
  void add(TrainRow row) { rows_.push_back(std::move(row)); }
  // The summary table of every point added, each configuration's ok repeats (two or more)
  // followed by a "median" row with their samples/s min-max; nothing when no point was added.
  // Then, where points were skipped, one line per reason with how many and which strategies.
  void printTable() const;
  // The results file keeps the finished points (and the interrupted one as failed): `out`, and
  // where the command takes --resume, that it goes on from there.
  void interrupted(const std::string& out, bool resumable) const;
  void lostNodeZero(const std::string& why, int node) const;

 private:
  void printRow(const TrainRow& r, const char* note = "") const;
  // The row's workload and bucket size, when the table shows that column (some row trains
  // another workload than the mlp, or bucketed rows differ in bucket size); else "".
  std::string detailOf(const TrainRow& r) const;
  // After the last ok repeat of row i's configuration, when it has two or more.
  void printMedianAfter(std::size_t i) const;
  std::vector<TrainRow> rows_;
};

// What the header of a point's table says.
struct CollectiveHeader {
  std::string op, algo;
  int n = 0;
  std::string transport;  // the run's
  std::string carrier;    // what carried the data: the transport, or the library's own
  std::string device;
  std::string how;  // what the parentheses add after "float32" (" sum, in place, root 0")
};

// `allreduce` and `collective`: nccl-tests' table per point, the summary per op, then the memcpy
// reference.
class CollectiveConsole {
 public:
  void header(const CollectiveHeader& h) const;
  // A measured record as a table row, any other as a "FAILED" line.
  void row(const CollectiveRecord& rec) const;
  void endPoint() const;  // the point's table is complete: flushed
  // Per op, device and placement measured with two or more algorithms: the fastest per N and
  // size, every algorithm's time as a multiple of its (record/collective_summary.h).
  void summary(const std::vector<SummaryTable>& tables) const;
  void pointFailed(const std::string& op, const std::string& algo, int n, const std::string& error) const;
  // A GPU allreduce curve's plateau against published figures (record/reference_busbw.h, curveVerdictText).
  void againstReference(const std::string& text) const;
  // The machine was busy beside the point (harness/machine_load.h): its timings are marked.
  void busy(const std::string& text) const;
  void referenceHeader() const;
  void reference(std::size_t bytes, double gbps) const;
  void interrupted(std::size_t done, std::size_t total) const;
  void failedPoints(std::size_t failed, std::size_t total) const;
};

}  // namespace tpb
