// Parameter-server allreduce, from scratch, over Transport P2P only.
//
// Rank 0 is the server. Every worker (ranks 1..N-1) sends its buffer to the server; the server
// adds them into its own buffer in rank order, then sends the sum back to every worker. The
// buffer moves in chunks so the server reduces chunk c while chunk c+1 is still arriving, and
// returns chunk c while later chunks are being reduced.
//
// Cost: the server receives and sends (N-1) * S bytes for an S-byte buffer, so its link (here:
// its memory bandwidth and one core) is the bottleneck and time grows linearly with N, where
// the ring's stays flat. That contrast is what the benchmark shows.
//
// Determinism: within each chunk the server reduces worker 1, then 2, ... in order, so the
// floating-point sum is the same on every run.
#include <algorithm>
#include <vector>

#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class ParamServerAllreduce final : public Allreduce {
 public:
  ParamServerAllreduce(CommContext& ctx, float* buf, std::size_t count, std::size_t chunkFloats)
      : t_(ctx.transport), buf_(buf), count_(count), chunk_(chunkFloats) {}

  void run() override {
    const int n = t_.size();
    if (n == 1) return;
    reqs_.clear();
    if (t_.rank() == 0) {
      for (std::size_t off = 0; off < count_; off += chunk_) {
        const std::size_t len = std::min(chunk_, count_ - off);
        for (int w = 1; w < n; ++w) t_.irecvReduce(w, buf_ + off, len)->wait();
        for (int w = 1; w < n; ++w) reqs_.push_back(t_.isend(w, buf_ + off, len * sizeof(float)));
      }
    } else {
      // The sum of chunk c comes back only after the server has our chunk c, so receiving into
      // the same memory we send from is safe. Chunk c's send and chunk c-1's receive are waited
      // together, one chunk at a time: on nccl they form one small group per chunk, matching the
      // server's per-chunk groups, instead of one group holding every chunk's send and receive.
      std::unique_ptr<Request> prevRecv;
      for (std::size_t off = 0; off < count_; off += chunk_) {
        const std::size_t len = std::min(chunk_, count_ - off);
        reqs_.push_back(t_.isend(0, buf_ + off, len * sizeof(float)));
        if (prevRecv) prevRecv->wait();
        prevRecv = t_.irecv(0, buf_ + off, len * sizeof(float));
      }
      if (prevRecv) prevRecv->wait();
    }
    for (auto& q : reqs_) q->wait();
  }

 private:
  Transport& t_;
  float* buf_;
  std::size_t count_;
  std::size_t chunk_;
  std::vector<std::unique_ptr<Request>> reqs_;
};

std::unique_ptr<Allreduce> makeParamServerAllreduce(CommContext& ctx, float* buf, std::size_t count,
                                                    std::size_t chunkBytes) {
  return std::make_unique<ParamServerAllreduce>(ctx, buf, count,
                                                std::max<std::size_t>(1, chunkBytes / sizeof(float)));
}

// The server receives N-1 buffers and sends N-1, one after another.
Cost paramServerCost(int n) { return {2.0 * (n - 1), 2.0 * (n - 1)}; }

// The server receives (N-1)*S and sends (N-1)*S; each worker sends S and receives S; every
// buffer moves in chunks.
Traffic paramServerTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  const std::size_t peers = r == 0 ? static_cast<std::size_t>(n - 1) : 1;
  const std::size_t msgs = exact::messages(count, chunkBytes);
  exact::addSend(t, peers * count, peers * msgs);
  exact::addRecv(t, peers * count, peers * msgs);
  return t;
}

AllreduceAlgo paramServerAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "param_server";
  a.origin = Origin::FromScratch;
  a.description = "parameter server: rank 0 gathers, reduces in rank order and sends the sum back";
  a.order = 1;
  a.color = "#1f77b4";
  a.cost = CostFormula{"2(N-1)α + 2(N-1)·S·β (the server's link)", "", paramServerCost};
  a.traffic = paramServerTraffic;
  a.makeChunked = makeParamServerAllreduce;
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    return makeParamServerAllreduce(ctx, buf, count, 512u << 10);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(paramServerAllreduceAlgo);

}  // namespace tpb
