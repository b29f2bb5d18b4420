// Binomial-tree broadcast, from scratch, over Transport P2P only.
//
// Ranks are renumbered so the root is 0 (v = (r - root) mod N). Rank v receives the whole buffer
// from v minus its lowest set bit, then sends it to v + 2^k for every 2^k below that bit (largest
// first, so the deepest subtree starts earliest). The root sends to 2^k for 2^k < N.
//
// Cost: ceil(log2 N) rounds of S bytes: T = ceil(log2 N) * (alpha + S * beta). Every non-root
// receives S once in ceil(S / chunk) messages; a rank sends S to each of its children (the root
// to ceil(log2 N) of them); N-1 copies of S cross the links in all.
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class TreeBroadcast final : public P2PCollective {
 public:
  using P2PCollective::P2PCollective;

  void run() override {
    const int n = t_.size(), v = (t_.rank() - a_.root + n) % n;
    auto real = [&](int u) { return (u + a_.root) % n; };
    int low = 1;  // v's lowest set bit; for the root the first power of two >= N
    while (low < n && !(v & low)) low <<= 1;
    if (v == 0) {
      copyFloats(t_.device(), a_.recv, a_.send, a_.count);
    } else {
      postRecv(t_, real(v - low), a_.recv, a_.count, chunk_, reqs_);
      waitAll(reqs_);
    }
    for (int mask = low >> 1; mask > 0; mask >>= 1)
      if (v + mask < n) postSend(t_, real(v + mask), a_.recv, a_.count, chunk_, reqs_);
    waitAll(reqs_);
  }
};

CollectiveAlgo treeBroadcastAlgo() {
  constexpr const char* kDescription =
      "binomial-tree broadcast: ceil(log2 N) rounds, each holder passes the buffer on";
  return fromScratchCollective<TreeBroadcast>("broadcast", "tree", kDescription, 0, "#d62728", binomialTreeCost(),
                                              exact::binomialTreeTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(treeBroadcastAlgo);

}  // namespace tpb
