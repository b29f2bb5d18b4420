// Ring allreduce, from scratch, over Transport P2P only.
//
// The buffer is cut into N segments. Reduce-scatter: in step s (0..N-2) rank r sends segment
// (r-s) mod N to rank r+1 and receives segment (r-s-1) mod N from rank r-1, adding it into its
// own copy; after N-1 steps rank r holds the complete sum of segment (r+1) mod N. All-gather:
// in step s rank r forwards segment (r+1-s) mod N and receives segment (r-s) mod N, overwriting.
//
// Cost: 2(N-1) steps; each rank sends and receives 2(N-1)/N * S bytes for an S-byte buffer and
// performs (N-1)/N * S bytes' worth of additions — independent of N in the limit, which is why
// nccl-tests normalises allreduce bandwidth by 2(N-1)/N ("busbw").
//
// Pipelining: each segment moves in chunks. What a rank sends in step t is exactly what it
// received in step t-1, so chunk c of step t is sent as soon as chunk c of step t-1 has arrived
// (and been reduced), while chunk c+1 is still in flight: sending, receiving and reducing
// overlap, and the ring never waits for a whole segment. Both neighbours post in the same
// (step, chunk) order, which is what the transport's per-pair FIFO matching needs.
//
// Forwarding (transports with fusedForwardLimit() > 0, i.e. shm): what a rank receives in step t
// is what it sends in step t+1, so the pair becomes one recvReduceSend / recvCopySend that
// streams each slice from the incoming channel straight into the outgoing one, as NCCL's ring
// primitives do. A reduce-scatter partial sum is then written once (into the next rank's ring)
// instead of stored, re-read and copied; see runForwarding().
#include "algorithms/allreduce_ring.h"

#include <algorithm>
#include <cstdlib>

#include "common/decimal.h"
#include "common/error.h"
#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {
constexpr std::size_t kAlignFloats = 16;  // segment boundaries on 64-byte lines
}

std::optional<long long> RingAllreduce::chunkKbFromEnv() {
  const char* v = std::getenv("TPB_RING_CHUNK_KB");
  if (!v || !*v) return std::nullopt;
  // Plain decimal KiB up to 1 GiB: atol read "0x10" as 0 and silently used the default, and
  // a huge value shifted past 64 bits.
  std::string why;
  const std::optional<long long> kb = parseDecimalInteger<long long>(v, why);
  if (!kb) TPB_THROW(UsageError, "TPB_RING_CHUNK_KB: " << why);
  if (*kb < 1 || *kb > (1 << 20)) TPB_THROW(UsageError, "TPB_RING_CHUNK_KB: must be in 1..1048576 (KiB), got " << v);
  return kb;
}

std::size_t RingAllreduce::defaultChunkBytes(Device device) {
  if (const std::optional<long long> kb = chunkKbFromEnv()) return static_cast<std::size_t>(*kb) << 10;
  // CPU: 512 KiB, which fits the caches the shm copies and sums stream through. GPU: the nccl
  // transport launches each step's posts as one group, so chunks do not overlap steps there;
  // each chunk is one more ncclSend/ncclRecv pair and sum kernel in the group, while NCCL
  // pipelines inside a message itself, so chunks are larger. 4 MiB is a starting point, not yet
  // tuned on a GPU; TPB_RING_CHUNK_KB overrides both.
  return device == Device::Cuda ? std::size_t{4} << 20 : std::size_t{512} << 10;
}

RingAllreduce::RingAllreduce(CommContext& ctx, float* buf, std::size_t count,
                             std::size_t chunkBytes)
    : t_(ctx.transport), buf_(buf), fused_(t_.fusedForwardLimit() > 0) {
  const std::size_t n = static_cast<std::size_t>(t_.size());
  // A forwarding transport bounds how large one forwarded message may be.
  if (fused_) chunkBytes = std::min(chunkBytes, t_.fusedForwardLimit());
  const std::size_t chunkFloats =
      std::max(kAlignFloats, chunkBytes / sizeof(float) / kAlignFloats * kAlignFloats);
  const std::size_t perSeg = (count + n - 1) / n;
  const std::size_t segFloats = (perSeg + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  chunks_.resize(n);
  for (std::size_t s = 0; s < n; ++s) {
    const std::size_t begin = std::min(s * segFloats, count);
    const std::size_t end = std::min(begin + segFloats, count);
    // Every segment gets the same number of chunks so both neighbours post identical
    // sequences; trailing segments of a small buffer may be empty (zero-byte no-ops).
    const std::size_t nChunks = std::max<std::size_t>(1, (segFloats + chunkFloats - 1) / chunkFloats);
    for (std::size_t c = 0; c < nChunks; ++c) {
      const std::size_t b = std::min(begin + c * chunkFloats, end);
      const std::size_t e = std::min(b + chunkFloats, end);
      chunks_[s].push_back({b, e - b});
    }
  }
  const std::size_t nChunks = chunks_[0].size();
  recvs_.resize(nChunks);
  sends_.reserve(2 * (n - 1) * nChunks);
}

void RingAllreduce::runForwarding() {
  // The same 2(N-1) steps, but what a rank receives in step t is what it sends in step t+1, so
  // each such pair is one forwarding op: reduce-scatter steps 1..N-2 are recvReduceSend (the
  // partial sum is never stored), the last reduce-scatter receive is recvReduceSend that also
  // keeps the finished segment (it is the first all-gather send), all-gather steps forward with
  // recvCopySend, and only the last receive is plain. Everything is posted up front, chunk by
  // chunk in step order, which is both neighbours' FIFO order and lets chunk c+1 start while c
  // is still travelling round the ring.
  const int n = t_.size(), r = t_.rank();
  const int next = (r + 1) % n, prev = (r - 1 + n) % n;
  auto seg = [n](int i) { return ((i % n) + n) % n; };
  reqs_.clear();
  for (std::size_t c = 0; c < chunks_[0].size(); ++c) {
    auto at = [&](int segment) -> const Piece& { return chunks_[seg(segment)][c]; };
    reqs_.push_back(t_.isend(next, buf_ + at(r).offset, at(r).count * sizeof(float)));
    for (int t = 1; t <= n - 2; ++t) {
      const Piece& p = at(r - t);
      reqs_.push_back(t_.irecvReduceSend(prev, buf_ + p.offset, nullptr, p.count, next));
    }
    const Piece& mine = at(r + 1);  // complete here after the last reduce-scatter step
    reqs_.push_back(t_.irecvReduceSend(prev, buf_ + mine.offset, buf_ + mine.offset, mine.count, next));
    for (int s = 0; s <= n - 3; ++s) {
      const Piece& p = at(r - s);
      reqs_.push_back(t_.irecvCopySend(prev, buf_ + p.offset, p.count, next));
    }
    const Piece& last = at(r - (n - 2));
    reqs_.push_back(t_.irecv(prev, buf_ + last.offset, last.count * sizeof(float)));
  }
  for (auto& q : reqs_) q->wait();
}

void RingAllreduce::run() {
  const int n = t_.size();
  if (n == 1) return;
  if (fused_) {
    runForwarding();
    return;
  }
  const int r = t_.rank();
  const int next = (r + 1) % n, prev = (r - 1 + n) % n;
  auto seg = [n](int i) { return ((i % n) + n) % n; };
  const std::size_t nChunks = chunks_[0].size();
  const int steps = 2 * (n - 1);
  sends_.clear();
  for (int t = 0; t < steps; ++t) {
    // Reduce-scatter steps t = 0..N-2, then all-gather steps t = N-1..2N-3 (s = t-(N-1)).
    const bool reducing = t < n - 1;
    const int sendSeg = reducing ? seg(r - t) : seg(r + 1 - (t - (n - 1)));
    const int recvSeg = reducing ? seg(r - t - 1) : seg(r - (t - (n - 1)));
    for (std::size_t c = 0; c < nChunks; ++c) {
      if (t > 0) recvs_[c]->wait();  // this chunk of what we forward has arrived
      const Piece& out = chunks_[sendSeg][c];
      const Piece& in = chunks_[recvSeg][c];
      sends_.push_back(t_.isend(next, buf_ + out.offset, out.count * sizeof(float)));
      recvs_[c] = reducing ? t_.irecvReduce(prev, buf_ + in.offset, in.count)
                           : t_.irecv(prev, buf_ + in.offset, in.count * sizeof(float));
    }
  }
  for (auto& q : recvs_) q->wait();
  for (auto& q : sends_) q->wait();
}

namespace {

// The exact traffic, restating the constructor's segmentation rather than running it: N segments
// of ceil(count/N) floats rounded up to 16, the last ones shorter or empty, each cut into the
// same number of chunks of chunkBytes (at least 16 floats). Reduce-scatter sends every segment but (r+1) and receives
// every one but r; all-gather sends every one but (r+2) and receives every one but (r+1). With
// equal segments that is 2(N-1)/N * S bytes each way in 2(N-1) * chunks messages.
Traffic ringTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  using exact::ceilDiv;
  const std::size_t segFloats = ceilDiv(ceilDiv(count, n), 16) * 16;
  const std::size_t chunkFloats = std::max<std::size_t>(16, chunkBytes / sizeof(float) / 16 * 16);
  for (int s = 0; s < n; ++s) {
    const std::size_t begin = std::min(s * segFloats, count), floats = std::min(begin + segFloats, count) - begin;
    const std::size_t chunks = ceilDiv(floats, chunkFloats);
    if (s != (r + 1) % n) exact::addSend(t, floats, chunks), exact::addRecv(t, floats, chunks);
    if (s != (r + 2) % n) exact::addSend(t, floats, chunks);
    if (s != r) exact::addRecv(t, floats, chunks);
  }
  return t;
}

AllreduceAlgo ringAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "ring";
  a.origin = Origin::FromScratch;
  a.description = "ring allreduce: reduce-scatter + all-gather, 2(N-1) steps, chunked and pipelined";
  a.order = 0;
  a.color = "#2ca02c";
  a.cost = ringAllreduceCost();
  a.traffic = ringTraffic;
  a.makeChunked = [](CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes) {
    return std::make_unique<RingAllreduce>(ctx, buf, count, chunkBytes);
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    return std::make_unique<RingAllreduce>(ctx, buf, count, RingAllreduce::defaultChunkBytes(ctx.device()));
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(ringAllreduceAlgo);

}  // namespace tpb
