// Ring reduce-scatter, from scratch, over Transport P2P only.
//
// The input holds N blocks of m = count/N floats; rank r ends with block r of the sum. In step s
// (0..N-2) rank r sends its partial sum of block (r-s-1) mod N to rank r+1 (in step 0 that is its
// own input block) and receives rank r-1's partial of block (r-s-2) mod N, adding its own input
// block to it. The last block to arrive is block r: it is summed straight into the output.
//
// Cost: N-1 steps; each rank sends and receives (N-1)/N * S bytes (S = the input) in
// (N-1) * ceil(m / chunk) messages, and adds (N-1) * m floats.
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class RingReduceScatter final : public P2PCollective {
 public:
  // Two partial sums in flight: the one being sent and the one arriving (device memory on GPUs,
  // where the transports reduce on the device).
  RingReduceScatter(CommContext& ctx, const CollectiveArgs& a)
      : P2PCollective(ctx, a), partial_{FloatScratch(ctx.device(), m_), FloatScratch(ctx.device(), m_)} {}

  void run() override {
    const int n = t_.size(), r = t_.rank();
    const Device d = t_.device();
    auto input = [&](int b) { return a_.send + static_cast<std::size_t>(((b % n) + n) % n) * m_; };
    if (n == 1) {
      copyFloats(d, a_.recv, a_.send, m_);
      return;
    }
    const int next = (r + 1) % n, prev = (r - 1 + n) % n;
    const float* out = input(r - 1);  // step 0 sends the own input block
    for (int s = 0; s < n - 1; ++s) {
      const bool last = s == n - 2;
      // The block arriving now is (r-s-2); the last one is block r, summed into the output.
      float* in = last ? a_.recv : partial_[s % 2].data();
      copyFloats(d, in, input(r - s - 2), m_);  // in place (recv is block r of send): a no-op
      postRecvReduce(t_, prev, in, m_, chunk_, reqs_);
      postSend(t_, next, out, m_, chunk_, reqs_);
      waitAll(reqs_);
      out = in;
    }
  }

 private:
  FloatScratch partial_[2];
};

CollectiveAlgo ringReduceScatterAlgo() {
  constexpr const char* kDescription =
      "ring reduce-scatter: N-1 steps, each adds its block to the partial sum it passes on";
  return fromScratchCollective<RingReduceScatter>("reduce_scatter", "ring", kDescription, 0, "#2ca02c",
                                                  blockStepsCost(), exact::blockStepsTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(ringReduceScatterAlgo);

}  // namespace tpb
