// tests/thread_world.h — runs N ranks as N threads of the test process, each with its own
// Transport over one in-process store, so collective tests need no process launch. (The
// process-per-rank path is covered by the launcher and CLI tests.)
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/store.h"
#include "comm/transports.h"
#include "common/run_id.h"
#include "core/allreduce.h"

namespace tpb::test {

// N ranks as threads, rank r's transport made by `make(store, runId, r)`; rethrows the first
// rank's error, in rank order, after every thread has ended.
using MakeTransport = std::function<std::unique_ptr<Transport>(Store& store, const std::string& runId, int rank)>;
inline void runThreadsWith(int n, const MakeTransport& make, const std::function<void(CommContext&)>& body) {
  static std::atomic<int> counter{0};
  auto store = Store::local();
  const std::string runId = makeRunId() + "-t" + std::to_string(counter++);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto t = make(*store, runId, r);
        CommContext ctx{*t, *store, "127.0.0.1", runId, {}};
        body(ctx);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Rank r of a Cuda world uses cuda:r (TransportArgs' localRank defaults to the rank).
inline void runThreads(const std::string& transport, int n,
                       const std::function<void(CommContext&)>& body,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60),
                       Device device = Device::Cpu) {
  runThreadsWith(
      n,
      [&](Store& store, const std::string& runId, int r) {
        TransportArgs args{store, runId, "127.0.0.1", r, n, n, device, timeout};
        return findTransport(transport).make(args);
      },
      body);
}

// Every transport of this build that a world of threads on the CPU can run: shm, gloo, grouped
// (not mpi, whose ranks mpirun must start). Tests that cover "every transport" take this list,
// so a transport added to the table is tested without naming it here.
inline std::vector<std::string> cpuTransports() {
  std::vector<std::string> names;
  for (const auto& t : transports())
    if (!t.needsMpiLauncher && t.unsupported(Device::Cpu, 2, 2).empty()) names.push_back(t.name);
  return names;
}

// A Traffic as a failure message reads it: "sent 4096 B in 2, received 4096 B in 2".
inline std::string str(const Traffic& t) {
  return "sent " + std::to_string(t.bytesSent) + " B in " + std::to_string(t.msgsSent) + ", received " +
         std::to_string(t.bytesRecv) + " B in " + std::to_string(t.msgsRecv);
}

}  // namespace tpb::test
