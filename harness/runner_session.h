// harness/runner_session.h — what `run`/`sweep` and `allreduce`/`collective` do the same way
// around their points, so that each runner keeps only its own points:
//
//   opening  claim the outputs (--out, --trace, each --save_dir: locked, and what is there already
//            checked against --resume/--overwrite) before anything is launched; continue a results
//            file --resume names; start the point driver (which joins an external job); once the
//            runner knows whether any point uses MPI, prepare it, then create the results file
//            and the trace with this command's meta (collected once, for both).
//   closing  say where the results and the trace were written.
//
// Only the writer (rank 0 of an external job, node 0 of several) claims and writes files; the
// others hold no results file and no trace. The driver goes before the outputs' locks are
// released, on every exit path.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/out_file.h"
#include "harness/point_driver.h"
#include "record/records.h"
#include "record/results.h"
#include "record/trace_file.h"

namespace tpb {

struct SessionOptions {
  std::string command;   // meta.command
  std::string out;       // --out: the results file; empty: none
  std::string trace;     // --trace: the trace file; empty: none
  OutputFlags flags;     // what may happen to an --out or --trace that is already there
  std::vector<std::string> saveDirs;  // --save_dir of the points: locked while the command runs
  bool writer = true;    // this process writes the files
  // Under tpbench's own launcher: meta.hosts is this host on one node, meta.ranks_per_node is
  // ranksPerNode when not 0.
  int nnodes = 1;
  int ranksPerNode = 0;
  PointDriverOptions driver;
};

class RunnerSession {
 public:
  // Throws UsageError (--resume without --out; an output that may not be written) before the
  // driver is started.
  explicit RunnerSession(const SessionOptions& opt);
  RunnerSession(const RunnerSession&) = delete;
  RunnerSession& operator=(const RunnerSession&) = delete;

  PointDriver& driver() { return *driver_; }
  // Prepares MPI when `usesMpi` (harness/point_driver.h), then creates what this command writes
  // that does not exist yet: the results file and the trace, whose clock starts now.
  void open(bool usesMpi);
  // nullptr where this process writes none.
  ResultsFile* results() { return results_.get(); }
  TraceFile* trace() { return trace_.get(); }
  // Where the outputs were written (harness/console_report.h).
  void close() const;
  // The results file's meta block (harness/meta.h), collected on first use.
  const Meta& meta();

 private:

  SessionOptions opt_;
  std::optional<OwnedOutput> out_, traceOut_;
  std::vector<std::unique_ptr<OutLock>> saveDirs_;
  std::unique_ptr<ResultsFile> results_;
  std::optional<PointDriver> driver_;
  std::optional<Meta> meta_;  // collected on first use
  std::unique_ptr<TraceFile> trace_;
};

}  // namespace tpb
