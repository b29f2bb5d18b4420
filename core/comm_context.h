// core/comm_context.h — what an algorithm or strategy may use inside one rank: the P2P
// transport (from-scratch code uses nothing else) and the rendezvous store plus bind address
// (library baselines build their own process groups from them).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "comm/transport.h"

namespace tpb {

class Store;

struct CommContext {
  Transport& transport;
  Store& store;
  std::string host;    // address this rank binds to (MASTER_ADDR on one node)
  std::string runId;   // unique per launch; prefixes store keys
  // Setup that several algorithm instances of one run may share (a library process group is
  // expensive to build and holds sockets), keyed by whoever created it.
  std::map<std::string, std::shared_ptr<void>> shared;
  int rank() const { return transport.rank(); }
  int size() const { return transport.size(); }
  Device device() const { return transport.device(); }
  std::chrono::milliseconds timeout() const { return transport.timeout(); }
};

}  // namespace tpb
