#include "harness/point_driver.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "comm/transports.h"
#include "common/error.h"
#include "harness/mpirun.h"
#include "record/results.h"
#include "worker/worker.h"

namespace tpb {

using nlohmann::json;

namespace {

std::string makeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tpbench.XXXXXX";
  if (!mkdtemp(tmpl.data())) TPB_THROW(Error, "mkdtemp(" << tmpl << "): " << std::strerror(errno));
  return tmpl;
}

}  // namespace

PointDriver::PointDriver(PointDriverOptions opt)
    : opt_(std::move(opt)), start_(std::chrono::steady_clock::now()) {
  installInterruptHandlers();
  dir_ = makeTempDir();
}

PointDriver::~PointDriver() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool PointDriver::interrupted() const { return interruptRequested(); }

void PointDriver::skip(const std::string& what) {
  ++index_;
  std::fprintf(stderr, "[%zu/%zu] %s\n", index_, opt_.total, what.c_str());
}

std::string needsMpiLauncher(const std::string& transport, const std::string& other) {
  if (!other.empty()) return other;
  return findTransport(transport).needsMpiLauncher ? "--transport " + transport : std::string();
}

PointOutcome PointDriver::run(const std::string& what, json job, const std::string& transport,
                              int procsPerNode, const std::string& needsMpi) {
  ++index_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "[%zu/%zu] %s", index_, opt_.total, what.c_str());
  if (launched_ > 0) std::fprintf(stderr, " (ETA %.0f s)", elapsed / launched_ * (opt_.total - index_ + 1));
  std::fprintf(stderr, "\n");

  PointOutcome out;
  const std::string jobPath = dir_ + "/job.json";
  out.resultPath = dir_ + "/result.json";
  std::remove(out.resultPath.c_str());
  job["transport"] = transport;
  job["result_path"] = out.resultPath;
  job["job_path"] = jobPath;
  job["comm_timeout_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.timeout).count();
  writeFileAtomic(jobPath, job.dump());

  LaunchSpec spec;
  spec.nprocPerNode = procsPerNode;
  spec.nnodes = opt_.nnodes;
  spec.nodeRank = opt_.nodeRank;
  spec.masterAddr = opt_.masterAddr;
  spec.masterPort = opt_.masterPort;
  spec.shareRunId = opt_.nnodes == 1;  // across nodes the ranks agree on one through the store
  spec.workerArgs = {"worker", "--job", jobPath};
  spec.timeout = opt_.timeout;
  spec.cleanup = findTransport(transport).cleanup;
  spec.viaMpirun = chooseMpirun(opt_.launcher, needsMpiLauncher(transport, needsMpi), opt_.nnodes);
  out.launch = launch(spec);
  ++launched_;

  out.result = json::object();
  if (access(out.resultPath.c_str(), R_OK) == 0) out.result = readJsonFile(out.resultPath);
  return out;
}

}  // namespace tpb
