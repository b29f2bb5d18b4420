// strategies/allreduce.h — the interface every allreduce algorithm implements, from-scratch
// (strategies/) and library-backed (baselines/) alike, and the table entry that registers one.
//
// As in gloo, the constructor does all setup (buffers, process groups, handshakes) and is not
// timed; run() is the hot loop that benchmarks time and training steps call.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "comm/transport.h"

namespace tpb {

class Store;

// What an algorithm may use: the P2P transport (from-scratch algorithms use nothing else) and
// the rendezvous store plus bind address (library baselines build their own process groups).
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

class Allreduce {
 public:
  virtual ~Allreduce() = default;
  // In place: afterwards buf[i] on every rank holds the sum of buf[i] over all ranks.
  virtual void run() = 0;
};

using AllreduceFactory =
    std::function<std::unique_ptr<Allreduce>(CommContext& ctx, float* buf, std::size_t count)>;

struct AllreduceAlgo {
  std::string name;
  std::string origin;       // "from scratch" or "library"
  std::string description;  // one line for `tpbench list`
  // Empty string when the algorithm can run on this device in this build, else the reason.
  std::function<std::string(Device)> unsupported;
  AllreduceFactory make;
};

// The from-scratch algorithms with an explicit pipelining chunk (tests use tiny chunks to
// exercise the multi-chunk paths on small buffers).
std::unique_ptr<Allreduce> makeRingAllreduce(CommContext& ctx, float* buf, std::size_t count,
                                             std::size_t chunkBytes);
std::unique_ptr<Allreduce> makeParamServerAllreduce(CommContext& ctx, float* buf,
                                                    std::size_t count, std::size_t chunkBytes);

// Registered algorithms (harness/registry.cc holds the table).
AllreduceAlgo ringAllreduceAlgo();
AllreduceAlgo paramServerAllreduceAlgo();
AllreduceAlgo libraryAllreduceAlgo();

}  // namespace tpb
