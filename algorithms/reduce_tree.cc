// Binomial-tree reduce, from scratch, over Transport P2P only: the broadcast tree run backwards.
//
// Ranks are renumbered so the root is 0 (v = (r - root) mod N). For 2^k = 1, 2, 4, ...: a rank
// whose bit k is set sends its partial sum to v - 2^k and is done; otherwise it adds in the
// partial sum of v + 2^k (when that rank exists). Children are summed in a fixed order, so the
// result is the same on every run.
//
// Cost: ceil(log2 N) rounds of S bytes: T = ceil(log2 N) * (alpha + S * beta) plus the additions.
// Every non-root sends S once in ceil(S / chunk) messages; a rank receives S from each child.
// The partial sums are kept in the output buffer, whose contents off the root are undefined
// afterwards (as in NCCL).
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class TreeReduce final : public P2PCollective {
 public:
  using P2PCollective::P2PCollective;

  void run() override {
    const int n = t_.size(), v = (t_.rank() - a_.root + n) % n;
    auto real = [&](int u) { return (u + a_.root) % n; };
    copyFloats(t_.device(), a_.recv, a_.send, a_.count);
    for (int mask = 1; mask < n; mask <<= 1) {
      if (v & mask) {
        postSend(t_, real(v - mask), a_.recv, a_.count, chunk_, reqs_);
        waitAll(reqs_);
        return;
      }
      if (v + mask < n) {
        postRecvReduce(t_, real(v + mask), a_.recv, a_.count, chunk_, reqs_);
        waitAll(reqs_);
      }
    }
  }
};

// The broadcast's traffic reversed: S out to the parent (not at the root), S in from each child.
Traffic treeReduceTraffic(int n, int r, int root, std::size_t count, std::size_t chunkBytes) {
  return exact::reversed(exact::binomialTreeTraffic(n, r, root, count, chunkBytes));
}

CollectiveAlgo treeReduceAlgo() {
  constexpr const char* kDescription =
      "binomial-tree reduce: ceil(log2 N) rounds, partial sums flow towards the root";
  return fromScratchCollective<TreeReduce>("reduce", "tree", kDescription, 0, "#d62728", binomialTreeCost(),
                                           treeReduceTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(treeReduceAlgo);

}  // namespace tpb
