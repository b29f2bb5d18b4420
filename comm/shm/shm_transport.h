// comm/shm/shm_transport.h — point-to-point over POSIX shared memory between the rank processes
// of one node.
//
// Each rank owns one segment holding its inbound channels, one per peer. A channel is a
// single-producer/single-consumer byte ring: the sender copies into it and advances `head`, the
// receiver copies (or reduces) out of it and advances `tail`. Every message starts with a
// 64-byte header carrying its length, so a size mismatch between send and recv is an error,
// not silent corruption. Payload is padded to 64 bytes so every message starts cache-line
// aligned. Large messages stream through the ring in slices, so a receiver starts consuming
// (and reducing) while the sender is still copying in.
//
// Single copy: a message of half a channel or more is not copied into the ring where the
// receiver may read the sender's memory (process_vm_readv; tried on every pair at setup, as
// Open MPI's CMA path does). The sender puts only a header with the buffer's address in the
// ring, and the receiver copies (or reduces) straight from that buffer, slice by slice, then
// counts the message in its channel's `pulled`, which completes the send. The bytes move
// once instead of twice, and they move while the sender computes: a pipeline stage that
// sends its activations and goes on with the next micro-batch holds nothing back. Sends
// behind such a message in the same pair go on at once; only the send itself waits to be read.
//
// Forwarding ops (irecvReduceSend, irecvCopySend) sit in two queues at once, the receive queue
// of `from` and the send queue of `to`, and move data only when they head both, so each pair's
// FIFO order holds for them as for plain sends and receives.
//
// Waiting: a rank first polls for up to 2 ms (pausing between polls when every rank has a core,
// yielding its core between them when ranks outnumber cores), then sleeps on a futex
// "doorbell" in its own segment; a peer that adds data or frees space rings it. One doorbell
// per rank lets one thread wait on all its channels at once, which is what makes concurrent
// send+recv (the ring's sendRecv) progress without threads.
//
// Posting allocates nothing once warm: ops and requests come from per-transport slot pools and
// the per-peer queues are rings of pointers that only grow to their high-water mark.
//
// Cleanup: segments are unlinked as soon as every rank has mapped them, so no name is left in
// /dev/shm once setup is done, however a process dies afterwards; the launcher also removes
// the names of a run after it ends, which covers a crash during setup.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/shm/slot_pool.h"
#include "comm/transport.h"

namespace tpb {

class Store;

struct ShmOptions {
  std::size_t channelBytes = 2u << 20;  // ring capacity per (sender, receiver) pair
  std::size_t sliceBytes = 256u << 10;  // most bytes moved per step before serving other ops
  // Messages of half a channel and more are read by the receiver from the sender's buffer
  // (process_vm_readv) where the kernel allows it; false sends everything through the rings.
  bool singleCopy = true;
};

// TPB_SHM_SINGLE_COPY: unset, empty or "1" leaves single copy on where the kernel allows it; "0"
// sends every message through the rings (to measure one against the other). Anything else
// throws UsageError naming it; the launchers check it before starting a rank.
bool shmSingleCopyFromEnv();

class ShmTransport final : public Transport {
 public:
  // Collective: every rank of the world constructs it with the same store and runId.
  ShmTransport(Store& store, const std::string& runId, int rank, int size,
               std::chrono::milliseconds timeout, ShmOptions options = {});
  ~ShmTransport() override;

  std::string name() const override { return "shm"; }
  std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecvReduce(int peer, float* dst, std::size_t count) override;
  // Forwarding streams slice by slice from one ring straight into the next: the sum (or copy)
  // of each slice is written once, into the outgoing ring (and into keep/dst when asked).
  std::size_t fusedForwardLimit() const override;
  std::unique_ptr<Request> irecvReduceSend(int from, const float* local, float* keep, std::size_t count,
                                           int to) override;
  std::unique_ptr<Request> irecvCopySend(int from, float* dst, std::size_t count, int to) override;

  // Whether messages of half a channel and more to `peer` go by single copy (tried at setup).
  bool singleCopyTo(int peer) const { return canPull_.at(static_cast<std::size_t>(peer)) != 0; }
  std::size_t singleCopyMin() const { return opt_.channelBytes / 2; }

  // Symmetric blocks are segments of their own, one per rank per allocation, mapped by every
  // rank and unlinked once all have (as the channels' segments are).
  void* allocateSymmetric(std::size_t bytes) override;
  void* peerAddress(int peer, const void* local) const override;
  void freeSymmetric(void* block) override;
  static constexpr int kMaxSymmetric = 64;  // allocations over a transport's life (removeSegments tries each name)

  // Name of rank `rank`'s segment for a run (as shm_open takes it, with the leading '/'); with
  // `block` >= 0, of its symmetric block number `block`.
  static std::string segmentName(const std::string& runId, int rank, int block = -1);
  // Unlinks every segment name a run could have left (missing names are fine).
  static void removeSegments(const std::string& runId, int size);

  struct Op;
  struct Segment;
  // Drives ops until `op` completes; throws TimeoutError if nothing moves for timeout().
  void waitFor(const Op& op);
  // Drops one reference to `op` (its request's or a queue's); the last one returns it to its pool.
  static void unref(Op* op);

 private:
  Op* newOp(int kind, int peer, void* buf, std::size_t bytes);
  std::unique_ptr<Request> request(Op* op);
  Op* post(int peer, int kind, void* buf, std::size_t bytes);
  bool progress();
  bool progressSend(Op& op);
  bool progressRecv(Op& op);
  bool progressForward(Op& op);
  void pull(Op& op, void* channelHeader);  // one slice of a single-copy receive
  // A single-copy message from `from` is read in full: its sender's buffer is free again.
  void pulledAll(int from, void* channelHeader);
  void readSlice(const Op& op, void* into, std::size_t n);  // the next n bytes of op's message
  Op* postForward(int kind, int from, int to, const float* local, char* keep, std::size_t bytes);
  void ring(int peer);

  struct SymmetricBlock {
    std::size_t bytes = 0;
    std::vector<char*> at;  // at[r]: rank r's block, mapped here
  };

  ShmOptions opt_;
  Store& store_;
  std::string runId_;
  std::vector<SymmetricBlock> blocks_;
  int blocksMade_ = 0;
  bool spin_;
  std::vector<Segment*> segs_;  // segs_[r]: rank r's segment, mapped here
  std::size_t segBytes_ = 0;
  SlotPool* ops_;       // Op slots
  SlotPool* requests_;  // ShmRequest slots
  std::vector<PtrQueue<Op>> sendQ_, recvQ_;
  std::vector<std::uint64_t> sendHead_, recvTail_;  // local copies of our side's counters
  // Single copy: sends announced and waiting to be read, per receiver; how many were announced
  // to each peer and how many this rank has read from each; the peers' processes; whether each
  // peer reads this rank's memory; where a reduce's slice lands.
  std::vector<PtrQueue<Op>> pullQ_;
  std::vector<std::uint64_t> pullsPosted_, pullsDone_;
  std::vector<int> pids_;
  std::vector<char> canPull_;
  std::vector<float> scratch_;
  std::size_t pending_ = 0;
};

}  // namespace tpb
