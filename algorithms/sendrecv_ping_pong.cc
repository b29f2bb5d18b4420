// Ping-pong sendrecv, from scratch, over Transport P2P only: the point-to-point primitive of
// torch.distributed (send/recv), measured for latency and bandwidth per transport.
//
// Ranks pair up (0,1), (2,3), ...; the last rank of an odd N sits out. Rank 2k sends its buffer
// to 2k+1 and then receives 2k+1's; rank 2k+1 receives first, then answers. One iteration is a
// round trip: two one-way messages of S bytes in sequence, so one-way latency is half of it.
//
// Cost: T = 2 * (alpha + S * beta); each paired rank sends S and receives S, in ceil(S / chunk)
// messages each way.
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class PingPong final : public P2PCollective {
 public:
  using P2PCollective::P2PCollective;

  void run() override {
    const int r = t_.rank(), partner = r ^ 1;
    if (partner >= t_.size()) return;
    if (r % 2 == 0) {
      postSend(t_, partner, a_.send, a_.count, chunk_, reqs_);
      waitAll(reqs_);
      postRecv(t_, partner, a_.recv, a_.count, chunk_, reqs_);
    } else {
      postRecv(t_, partner, a_.recv, a_.count, chunk_, reqs_);
      waitAll(reqs_);
      postSend(t_, partner, a_.send, a_.count, chunk_, reqs_);
    }
    waitAll(reqs_);
  }
};

// S each way between 2k and 2k+1; the last rank of an odd N moves nothing.
Traffic pingPongTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if ((r ^ 1) < n) exact::exchange(t, count, count, chunkBytes);
  return t;
}

CollectiveAlgo pingPongAlgo() {
  constexpr const char* kDescription =
      "ping-pong between ranks 2k and 2k+1: one round trip per iteration";
  return fromScratchCollective<PingPong>("sendrecv", "ping_pong", kDescription, 0, "#17becf", roundTripCost(),
                                         pingPongTraffic);
}

}  // namespace

TPB_REGISTER_COLLECTIVE(pingPongAlgo);

}  // namespace tpb
