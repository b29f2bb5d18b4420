// comm/nccl/nccl_transport.h — point-to-point between GPUs over NCCL's ncclSend/ncclRecv. Rank r
// drives cuda:LOCAL_RANK, or cuda:0 when it sees one GPU only (comm/cuda/devices.h: NCCL cannot
// put two ranks of one communicator on one GPU), and every
// buffer passed to it is device memory on that GPU.
//
// Posts are deferred: isend/irecv/irecvReduce only queue the operation, and the queue is launched
// as one ncclGroupStart/ncclGroupEnd group when a request is waited, flush() is called, or a
// barrier or collective is issued. NCCL runs a send as a blocking kernel that finishes only when its peer receives,
// so a ring where every rank posts "send to next, then receive from prev" on one stream would
// deadlock once a message outgrows NCCL's internal buffers; inside one group NCCL progresses all
// the queued sends and receives together. The algorithms in strategies/ post identical
// sequences on matching neighbours and wait at matching points, so the groups line up across
// ranks the same way sendRecv pairs do.
//
// Ordering with the caller's kernels: every launch (a group, a collective) first makes the
// transport's stream wait for an event recorded on the legacy default stream, where LibTorch
// queues its kernels unless told otherwise. So a gradient that backward() is still computing is
// sent only once it is complete, without the host waiting for it; and since wait() returns only
// after the group has finished, whatever the caller queues next sees the received data.
//
// Completion: each launched group records a CUDA event on the transport's own non-blocking
// stream after its operations (and after the sum kernels of its irecvReduce operations).
// wait() polls that event; if it has not fired after timeout(), the communicator is aborted
// (ncclCommAbort, which also ends the stuck kernels) and a TimeoutError names the peer. Host-side
// blocking inside NCCL itself (ncclCommInitRank waiting for the other ranks, first-use
// connection setup) is not under this timeout: the launcher's --timeout ends such a rank.
//
// The rendezvous: rank 0 makes the ncclUniqueId and publishes its raw bytes in tpb::Store under
// "nccl/<runId>/unique_id"; the other ranks read it there.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport.h"

namespace tpb {

class Store;

class NcclTransport final : public Transport {
 public:
  // Collective: every rank of the world constructs it with the same store and runId.
  // `cudaDevice` is this rank's LOCAL_RANK; it drives rankCudaDevice(LOCAL_RANK, visible GPUs).
  NcclTransport(Store& store, const std::string& runId, int rank, int size, int cudaDevice,
                std::chrono::milliseconds timeout);
  ~NcclTransport() override;

  std::string name() const override { return "nccl"; }
  std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) override;
  // Receives into device scratch, then adds it into dst with reduceSumCuda on the same stream.
  std::unique_ptr<Request> irecvReduce(int peer, float* dst, std::size_t count) override;
  // A one-element ncclAllReduce: the base class's dissemination barrier would pass host bytes.
  void barrier() override;
  // Launches the queued operations as one NCCL group and records the group's event.
  void flush() override;
  // Staged through a device buffer owned by the transport (grown as needed, kept for reuse).
  void sendHost(int peer, const void* buf, std::size_t bytes) override;
  void recvHost(int peer, void* buf, std::size_t bytes) override;
  // CUDA events recorded on stream(), where every operation is queued: the elapsed time counts
  // the last kernel before stopUs() (or queueStop()) and nothing after it.
  std::unique_ptr<IntervalTimer> makeTimer() override;
  // The destructor then aborts the communicator instead of destroying it (ncclCommDestroy
  // finalizes with the peers, which a failed job may have lost).
  void markFailed() override { failed_ = true; }

  // For library collectives (algorithms/allreduce_library.cc) on the same communicator and stream.
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int cudaDevice() const { return device_; }
  using CollectiveOp = std::function<ncclResult_t(ncclComm_t, cudaStream_t)>;
  // Launches what is queued, then enqueues `op` (an NCCL collective on comm() and stream()),
  // ordered after the default stream's work, and returns at once; the request's wait() waits
  // for it under the transport's timeout, aborting the communicator if it expires. `what` names
  // it in errors and, under --trace, its span on the GPU timeline: a string literal.
  std::unique_ptr<Request> startCollective(const char* what, const CollectiveOp& op);
  // startCollective(what, op)->wait().
  void runCollective(const char* what, const CollectiveOp& op);

  struct Group;
  // Waits until `group` has completed on the GPU (launching it first if it is still queued).
  void waitGroup(Group& group, const char* what, int peer);

 private:
  enum class OpKind { Send, Recv, RecvReduce };
  struct PendingOp {
    OpKind kind;
    int peer;
    void* buf;                  // source (Send), destination (Recv, RecvReduce: the sum's dst)
    std::size_t bytes;
    std::size_t scratchOffset;  // RecvReduce: where in the scratch arena the message lands
  };

  std::unique_ptr<Request> post(OpKind kind, int peer, void* buf, std::size_t bytes, const char* what);
  void checkUsable() const;
  void abortComm();
  [[noreturn]] void abortAndThrow(bool timedOut, const std::string& msg);
  void shutdown();  // the destructor's work; also undoes a constructor that throws
  cudaEvent_t takeEvent();
  void makeCurrent() const;
  // Makes stream_ wait for the work queued so far on the legacy default stream.
  void orderAfterDefaultStream();

  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool aborted_ = false;  // after ncclCommAbort: every later call throws
  bool failed_ = false;   // an error was seen: the destructor aborts instead of destroying
  std::vector<PendingOp> pending_;
  std::shared_ptr<Group> open_;  // the group that pending_ will be launched as
  std::vector<cudaEvent_t> freeEvents_;
  // Scratch for irecvReduce. One arena is enough: everything runs in order on stream_, so the
  // next group's receives cannot start before the previous group's sums have read the arena.
  float* scratch_ = nullptr;
  std::size_t scratchBytes_ = 0;
  std::size_t scratchUsed_ = 0;  // by the queued group
  int* barrierBuf_ = nullptr;    // one device int for barrier()
  cudaEvent_t upstream_ = nullptr;  // recorded on the default stream before each launch
  void* hostStage_ = nullptr;       // sendHost/recvHost staging
  std::size_t hostStageBytes_ = 0;
  void* hostStage(std::size_t bytes);
};

// `t` as the nccl transport, for library collectives that run on its communicator and stream;
// throws tpb::Error naming `who` when the run uses another transport.
NcclTransport& ncclTransportOf(Transport& t, const char* who);

}  // namespace tpb
