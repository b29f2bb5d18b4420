// comm/grouped/grouped_transport.h — shared memory between the ranks of one node, driven the
// way the nccl transport drives NCCL, so that schedules written against Transport meet NCCL's
// grouping semantics on a machine without GPUs.
//
// What it reproduces (comm/nccl/nccl_transport.h describes the original):
//  * Posts are deferred. isend/irecv/irecvReduce only queue the operation; the queue is
//    launched as one group when a request of it is waited, when flush() is called, or before a
//    barrier.
//  * Each rank has one stream: a thread that runs the launched groups one after another, in
//    launch order. A group completes when all its operations have; the next one starts then.
//  * No completion without the receiver: a send completes, and with it its group and the
//    stream behind it, only once the group holding the matching receive is running on the
//    peer's stream. The receiving stream announces each receive as its group starts ("clear to
//    send", a one-byte message on a second shm transport of its own), and the sending group
//    waits for those announcements. The bytes themselves may move earlier (shm copies into the
//    peer's ring when there is room), which changes no order, only how soon an active receive
//    finds its data.
// So a schedule that would deadlock on NCCL (a send waiting for a receive that sits behind it
// on the peer's stream) deadlocks here too and ends in a TimeoutError naming the peer, and one
// that NCCL would serialise (sends held back until the next wait) is serialised here, which the
// pipeline's bubble shows. Data moves over ShmTransport, so sizes, ordering and size checks are
// shm's. The announcements are not counted in traffic(): they stand for NCCL's internal
// handshake, not for the algorithm's messages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport.h"

namespace tpb {

class Store;
class ShmTransport;

class GroupedTransport final : public Transport {
 public:
  // Collective: every rank of the world constructs it with the same store and runId.
  GroupedTransport(Store& store, const std::string& runId, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~GroupedTransport() override;

  std::string name() const override { return "grouped"; }
  std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) override;
  // The sum runs on the stream after its group, as the nccl transport's sum kernels do.
  std::unique_ptr<Request> irecvReduce(int peer, float* dst, std::size_t count) override;
  void flush() override;
  void barrier() override;
  // As the nccl transport's abort: the destructor then drops what is queued instead of running
  // it to its end with peers that may be gone.
  void markFailed() override;

  // The run ids of the two shm transports under it, for cleanup.
  static std::string dataRunId(const std::string& runId) { return runId + "-gd"; }
  static std::string controlRunId(const std::string& runId) { return runId + "-gc"; }

  struct Group;
  // Blocks until `g` has run on the stream (launching it first if it is still queued); throws
  // what the stream threw, or TimeoutError when the stream itself stopped moving.
  void waitGroup(Group& g, const char* what, int peer);

 private:
  enum class OpKind { Send, Recv, RecvReduce };
  struct Op {
    OpKind kind;
    int peer;
    void* buf;
    std::size_t bytes;
  };

  std::unique_ptr<Request> post(OpKind kind, int peer, void* buf, std::size_t bytes, const char* what);
  void streamLoop();
  void runGroup(const std::vector<Op>& ops);

  std::unique_ptr<ShmTransport> data_, control_;  // used by the stream thread only once it runs
  std::vector<Op> pending_;                       // host side: the open group's operations
  std::shared_ptr<Group> open_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Group>> launched_;   // waiting for the stream, in launch order
  std::uint64_t completed_ = 0;                   // groups the stream has finished
  std::exception_ptr failure_;                    // what the stream threw; every later wait rethrows it
  bool stopping_ = false;
  bool abandoned_ = false;  // markFailed: nothing queued is run any more
  std::thread stream_;
};

}  // namespace tpb
