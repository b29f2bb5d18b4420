// harness/point_driver.h — the one per-point loop every launching subcommand shares (`run`,
// `sweep`, `allreduce`), nccl-tests' "one driver, a small table per collective" idea: the driver
// owns what every point does the same way, the runners keep only what differs (the job's
// content, building records, printing tables).
//
// Per point it prints "[k/total] <what> (ETA n s)", writes the job file into its scratch
// directory, fills the LaunchSpec (layout, ports, run id, timeout, the transport's cleanup),
// launches, and reads what rank 0 wrote to the result file. The scratch directory is made once
// and removed when the driver goes, on every exit path (errors and interrupts included).
// Constructing a driver installs the launcher's signal handling (harness/launch.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/launch.h"

namespace tpb {

struct PointDriverOptions {
  std::size_t total = 0;  // points in the sweep, skipped ones included: "[k/total]" and the ETA
  std::chrono::seconds timeout{300};  // a launch's limit, also the ranks' communication timeout
  // Layout, torchrun's names; one node by default.
  int nnodes = 1, nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  std::uint16_t masterPort = 0;  // 0 on one node: a free port
  // --launcher: "" (tpbench's own, mpirun for points that need it), "tpbench" or "mpirun". The
  // runners check it against every point before launching anything (chooseMpirun).
  std::string launcher;
};

struct PointOutcome {
  LaunchResult launch;
  nlohmann::json result;   // what rank 0 wrote; an empty object when it wrote nothing
  std::string resultPath;  // names the file in errors (JsonIn)
};

// What in a point over `transport` needs ranks started by mpirun: `other` when not empty
// ("--algos mpi"), else "--transport NAME" when the transport does, else "".
std::string needsMpiLauncher(const std::string& transport, const std::string& other = "");

class PointDriver {
 public:
  explicit PointDriver(PointDriverOptions opt);
  ~PointDriver();  // removes the scratch directory
  PointDriver(const PointDriver&) = delete;
  PointDriver& operator=(const PointDriver&) = delete;

  // True once SIGINT, SIGTERM or SIGHUP arrived: start no more points.
  bool interrupted() const;
  // Counts a point that is not launched (skipped, already done) and prints "[k/total] <what>".
  void skip(const std::string& what);
  // Counts and launches one point of `procsPerNode` ranks per node over `transport`. `job` is the
  // kind-specific part; the driver adds transport, result_path, job_path and comm_timeout_ms.
  // `needsMpi` names what in the point needs ranks started by mpirun besides the transport
  // ("--algos mpi"), or is empty.
  PointOutcome run(const std::string& what, nlohmann::json job, const std::string& transport,
                   int procsPerNode, const std::string& needsMpi = "");

 private:
  PointDriverOptions opt_;
  std::string dir_;
  std::size_t index_ = 0, launched_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tpb
