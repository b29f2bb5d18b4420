#include "harness/point_driver.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "comm/net_iface.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/error.h"
#include "record/results.h"
#include "worker/point_sync.h"
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
  if (opt_.nnodes > 1) {
    host_ = thisHostName();
    address_ = bindAddress(opt_.masterAddr, opt_.iface).address;
  }
}

Store& PointDriver::sharedStore() {
  if (store_) return *store_;
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.rendezvousTimeout);
  if (opt_.nodeRank == 0) {
    store_ = Store::serve(opt_.masterAddr, opt_.masterPort, wait);
  } else {
    try {
      store_ = Store::connect(opt_.masterAddr, opt_.masterPort, wait);
    } catch (const std::exception& e) {
      TPB_THROW(Error, "rendezvous: node 0's store at " << opt_.masterAddr << ":" << opt_.masterPort
                                                        << " was not reachable within " << opt_.rendezvousTimeout.count()
                                                        << " s (--rendezvous_timeout): " << e.what());
    }
  }
  store_->set("tpb/node/" + std::to_string(opt_.nodeRank),
              json{{"node_rank", opt_.nodeRank}, {"host", host_}, {"address", address_}}.dump());
  return *store_;
}

json PointDriver::nodeHosts() {
  json nodes = json::array();
  if (!store_) return nodes;
  for (int n = 0; n < opt_.nnodes; ++n) {
    const std::string key = "tpb/node/" + std::to_string(n);
    try {
      if (store_->check(key)) nodes.push_back(json::parse(store_->get(key)));
    } catch (const std::exception&) {
      // a node's entry that cannot be read is left out, not the point
    }
  }
  return nodes;
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

PointOutcome PointDriver::run(const std::string& what, json job, const std::string& transport,
                              int procsPerNode) {
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
  job["rendezvous_timeout_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.rendezvousTimeout).count();
  job["point"] = index_;
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
  if (!opt_.iface.empty())
    spec.extraEnv = {{"GLOO_SOCKET_IFNAME", opt_.iface}, {"NCCL_SOCKET_IFNAME", opt_.iface}};
  if (opt_.nnodes > 1) {
    try {
      spec.sharedStore = &sharedStore();
    } catch (const Error& e) {
      // Node 0 never came: this point fails here, the next one tries again.
      ++launched_;
      out.launch.error = e.what();
      out.result = json::object();
      return out;
    }
    spec.pointPrefix = pointPrefix(static_cast<long long>(index_));
    spec.host = host_;
    spec.address = address_;
  }
  out.launch = launch(spec);
  ++launched_;

  out.result = json::object();
  if (access(out.resultPath.c_str(), R_OK) == 0) out.result = readJsonFile(out.resultPath);
  return out;
}

}  // namespace tpb
