// algorithms/allreduce_ring.h — see allreduce_ring.cc for the algorithm and its cost.
#pragma once

#include <optional>

#include "core/allreduce.h"

namespace tpb {

class RingAllreduce final : public Allreduce {
 public:
  // chunkBytes: pipelining granularity; each segment moves in chunks of at most this size.
  RingAllreduce(CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes);
  void run() override;

  // TPB_RING_CHUNK_KB when set, else the device's default (512 KiB on CPU, 4 MiB on GPU).
  // A TPB_RING_CHUNK_KB that is not plain decimal in 1..1048576 throws UsageError naming it.
  static std::size_t defaultChunkBytes(Device device);
  // TPB_RING_CHUNK_KB in KiB where it is set (checked as above), else nullopt.
  static std::optional<long long> chunkKbFromEnv();

 private:
  struct Piece {
    std::size_t offset, count;
  };
  void runForwarding();  // on transports that forward (fusedForwardLimit() > 0)

  Transport& t_;
  float* buf_;
  bool fused_;
  std::vector<std::vector<Piece>> chunks_;  // chunks_[segment] = that segment's chunks
  std::vector<std::unique_ptr<Request>> recvs_, sends_, reqs_;
};

}  // namespace tpb
