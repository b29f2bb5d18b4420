// Ring allgather, from scratch, over Transport P2P only.
//
// Every rank contributes a block of m = count/N floats. In step s (0..N-2) rank r sends block
// (r-s) mod N to rank r+1 and receives block (r-s-1) mod N from rank r-1 into its place in the
// output; what it receives in step s is what it sends in step s+1.
//
// Cost: N-1 steps; each rank sends and receives (N-1)/N * S bytes (S = the gathered output) in
// (N-1) * ceil(m / chunk) messages — nccl-tests' busbw factor (N-1)/N.
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class RingAllgather final : public P2PCollective {
 public:
  using P2PCollective::P2PCollective;

  void run() override {
    const int n = t_.size(), r = t_.rank();
    auto block = [&](int b) { return a_.recv + static_cast<std::size_t>(((b % n) + n) % n) * m_; };
    copyFloats(t_.device(), block(r), a_.send, m_);  // a no-op in place
    const int next = (r + 1) % n, prev = (r - 1 + n) % n;
    for (int s = 0; s < n - 1; ++s) {
      postRecv(t_, prev, block(r - s - 1), m_, chunk_, reqs_);
      postSend(t_, next, block(r - s), m_, chunk_, reqs_);
      waitAll(reqs_);
    }
  }
};

CollectiveAlgo ringAllgatherAlgo() {
  constexpr const char* kDescription =
      "ring allgather: N-1 steps, each rank forwards the block it just received";
  return fromScratchCollective<RingAllgather>("allgather", "ring", kDescription, 0, "#2ca02c",
                                              blockStepsCost(), exact::blockStepsTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(ringAllgatherAlgo);

}  // namespace tpb
