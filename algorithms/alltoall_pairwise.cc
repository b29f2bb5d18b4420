// Pairwise-exchange alltoall, from scratch, over Transport P2P only.
//
// Both buffers hold N blocks of m = count/N floats. Rank r keeps its own block r, then in step
// s = 1..N-1 sends block (r+s) mod N to rank r+s and receives block (r-s) mod N from rank r-s:
// every step is one exchange per rank, and no rank is the target of two senders at once.
//
// Cost: N-1 steps of m floats each way: each rank sends and receives (N-1)/N * S bytes in
// (N-1) * ceil(m / chunk) messages — nccl-tests' busbw factor (N-1)/N.
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class PairwiseAlltoall final : public P2PCollective {
 public:
  using P2PCollective::P2PCollective;

  void run() override {
    const int n = t_.size(), r = t_.rank();
    const std::size_t m = m_;
    copyFloats(t_.device(), a_.recv + r * m, a_.send + r * m, m);
    for (int s = 1; s < n; ++s) {
      const int to = (r + s) % n, from = (r - s + n) % n;
      postRecv(t_, from, a_.recv + from * m, m, chunk_, reqs_);
      postSend(t_, to, a_.send + to * m, m, chunk_, reqs_);
      waitAll(reqs_);
    }
  }
};

CollectiveAlgo pairwiseAlltoallAlgo() {
  constexpr const char* kDescription =
      "pairwise exchange: in step s = 1..N-1 rank r sends to r+s, receives from r-s";
  return fromScratchCollective<PairwiseAlltoall>("alltoall", "pairwise", kDescription, 0, "#8c564b",
                                                 blockStepsCost(), exact::blockStepsTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(pairwiseAlltoallAlgo);

}  // namespace tpb
