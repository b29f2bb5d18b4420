// comm/transport.h — the point-to-point interface that every from-scratch algorithm is written
// against. Algorithms see ranks and buffers, never sockets or segments (gloo's "context and
// pairs" idea): the same ring runs over shared memory, Gloo's TCP pairs or NCCL.
//
// Semantics shared by every implementation:
//  * Messages between an ordered pair (src -> dst) are matched in the order they were posted,
//    and the receiver must post the same byte count as the sender (checked where possible).
//  * A zero-byte message is a no-op on both sides.
//  * Buffers live on device(): host memory for Device::Cpu, device memory for Device::Cuda. They
//    must stay valid until the request completes.
//  * Every wait has a timeout: a request that makes no progress for timeout() throws
//    tpb::TimeoutError naming the peer, so a dead or stuck peer never hangs a rank.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpb {

enum class Device { Cpu, Cuda };
const char* deviceName(Device d);

// Times a stretch of a transport's work, such as one benchmark iteration. start() marks the
// beginning; stopUs() returns the microseconds since, counting the work queued in between to its
// end (it waits for it). Made by Transport::makeTimer(): where the work runs is the transport's
// to know, so code that times need not name a transport.
class IntervalTimer {
 public:
  virtual ~IntervalTimer() = default;
  virtual const char* method() const = 0;  // recorded with the measurement, e.g. "steady_clock"
  virtual void start() = 0;
  virtual double stopUs() = 0;
  // Marks the end now, behind the work queued so far, without waiting; the next stopUs() then
  // reads that mark. For a device stream's timer: after the host has waited for the work, a stop
  // taken then would count the host's waiting too. Does nothing where the work is done when its
  // calls return (the default: the steady clock).
  virtual void queueStop() {}
};

// One posted operation. wait() blocks until it completes (or throws).
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

// What one rank has moved over its transport: bytes and messages sent and received, counted
// when posted (a posted message is always completed or the run fails). A zero-byte message is a
// no-op and is not counted; a forwarding post (irecvReduceSend, irecvCopySend) counts as one
// receive and one send. Exact and deterministic for a given algorithm, size and N, which is
// what the traffic tests and `compare` rely on.
struct Traffic {
  std::uint64_t bytesSent = 0, bytesRecv = 0, msgsSent = 0, msgsRecv = 0;
  Traffic operator-(const Traffic& o) const {
    return {bytesSent - o.bytesSent, bytesRecv - o.bytesRecv, msgsSent - o.msgsSent, msgsRecv - o.msgsRecv};
  }
  bool operator==(const Traffic& o) const {
    return bytesSent == o.bytesSent && bytesRecv == o.bytesRecv && msgsSent == o.msgsSent && msgsRecv == o.msgsRecv;
  }
  bool operator!=(const Traffic& o) const { return !(*this == o); }
};

class Transport {
 public:
  Transport(int rank, int size, Device device, std::chrono::milliseconds timeout);
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  virtual std::string name() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  Device device() const { return device_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Non-blocking posts. Requests to different peers progress concurrently.
  virtual std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) = 0;
  virtual std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) = 0;
  // Receives `count` floats from `peer` and adds them into `dst` (dst[i] += incoming[i]).
  // The default receives into scratch memory and reduces on completion; transports that can
  // reduce straight out of their own buffers (shm) override it to save a copy — the same idea
  // as NCCL's recvReduce primitive.
  virtual std::unique_ptr<Request> irecvReduce(int peer, float* dst, std::size_t count);

  // Forwarding, as NCCL's recvReduceSend / recvCopySend primitives: the incoming message is
  // passed on to `to` as it streams in, without a separate send of a stored copy, which saves
  // a pass over memory per ring step. A transport that can do this returns how large one such
  // message may be (fusedForwardLimit() > 0; a larger one could deadlock a ring of them) and
  // implements the two posts; the others return 0 and throw from the posts.
  //
  // irecvReduceSend: receives `count` floats from `from`, adds `local` to them and sends the
  // sums to `to`; also stores them in `keep` when it is not null (keep may equal local).
  // irecvCopySend: receives `count` floats from `from` into `dst` and sends them on to `to`.
  // Either one counts as a receive from `from` and a send to `to` in their pairs' FIFO order.
  virtual std::size_t fusedForwardLimit() const { return 0; }
  virtual std::unique_ptr<Request> irecvReduceSend(int from, const float* local, float* keep,
                                                   std::size_t count, int to);
  virtual std::unique_ptr<Request> irecvCopySend(int from, float* dst, std::size_t count, int to);

  // Symmetric memory, as MPI-3's MPI_Win_allocate_shared or NVSHMEM's heap: a block of `bytes`
  // on every rank that every rank's process can load from and store to directly. Collective:
  // every rank allocates the same sizes in the same order. Returns this rank's block, zeroed, or
  // nullptr where the transport has no such memory (the default). peerAddress() maps an address
  // inside this rank's block to the same offset of `peer`'s block as this process sees it
  // (nullptr when `local` lies in no block); freeSymmetric() unmaps one, on this rank only.
  virtual void* allocateSymmetric(std::size_t bytes) {
    (void)bytes;
    return nullptr;
  }
  virtual void* peerAddress(int peer, const void* local) const {
    (void)peer, (void)local;
    return nullptr;
  }
  virtual void freeSymmetric(void* block) { (void)block; }
  // Blocking conveniences built on the posts above.
  void send(int peer, const void* buf, std::size_t bytes);
  void recv(int peer, void* buf, std::size_t bytes);
  void sendRecv(int sendPeer, const void* sendBuf, std::size_t sendBytes, int recvPeer,
                void* recvBuf, std::size_t recvBytes);
  // Blocking send/recv of HOST memory whatever device() is, for small control messages (epoch
  // statistics, timings). The default passes the buffer straight to send/recv; a transport that
  // moves device memory only (nccl) stages it through a device buffer.
  virtual void sendHost(int peer, const void* buf, std::size_t bytes) { send(peer, buf, bytes); }
  virtual void recvHost(int peer, void* buf, std::size_t bytes) { recv(peer, buf, bytes); }
  // Starts what has been posted and not yet started. A transport that defers posts until a wait
  // (nccl, grouped: NCCL runs the queued sends and receives as one group) launches them now, so
  // a send can leave while the caller computes; elsewhere posts start at once and this does
  // nothing. A schedule calls it after a send it wants to leave before its next wait
  // (workload/pipeline_step.h says where and why a pipeline does).
  virtual void flush() {}
  // Every rank waits until all ranks have entered. The default is a dissemination barrier
  // (ceil(log2 N) rounds of one-byte send/recv), so it needs nothing but P2P.
  virtual void barrier();
  // A timer for this transport's work. The default reads the steady clock around the calls,
  // right for transports whose calls return with their work done on the host; a transport that
  // queues work on a device stream (nccl) times it there with events (nccl-tests' method).
  virtual std::unique_ptr<IntervalTimer> makeTimer();
  // The job failed, here or on another rank, and this transport is about to be destroyed on the
  // error path: its destructor must not wait for peers that may be gone. A transport whose
  // shutdown can block on its peers (nccl: ncclCommDestroy finalizes with them) aborts instead;
  // the default does nothing.
  virtual void markFailed() {}

  // Everything this rank has posted since the transport was made (barriers and control messages
  // included): take the difference of two readings to count one stretch of work.
  Traffic traffic() const { return traffic_; }

 protected:
  void checkPeer(int peer, const char* op) const;
  // Every implementation calls these from its posts (Traffic says what counts).
  void countSend(std::size_t bytes) {
    if (bytes == 0) return;
    traffic_.bytesSent += bytes;
    ++traffic_.msgsSent;
  }
  void countRecv(std::size_t bytes) {
    if (bytes == 0) return;
    traffic_.bytesRecv += bytes;
    ++traffic_.msgsRecv;
  }
  // Scratch host buffers for the default irecvReduce, recycled between requests so the hot
  // loop does not allocate once it is warm.
  std::vector<float> takeScratch(std::size_t count);
  void giveScratch(std::vector<float> v);

 private:
  int rank_;
  int size_;
  Device device_;
  std::chrono::milliseconds timeout_;
  std::vector<std::vector<float>> scratch_;
  std::uint64_t barrierRound_ = 0;
  Traffic traffic_;
};

// A request that is complete when posted (zero-byte messages, size-1 worlds).
class DoneRequest final : public Request {
 public:
  void wait() override {}
};

}  // namespace tpb
