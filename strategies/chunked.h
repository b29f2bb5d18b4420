// strategies/chunked.h — what the from-scratch collectives share: posting a buffer as a sequence
// of chunk-sized messages, their common state, and their registry entry.
//
// Chunks bound how much one message holds (a transport streams each
// through its buffers) and make the message count a closed form: ceil(count / chunk) per buffer,
// none for an empty one (a zero-byte message is a no-op and is not counted).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/collective.h"
#include "strategies/ring_allreduce.h"

namespace tpb {

using Requests = std::vector<std::unique_ptr<Request>>;

// Floats per chunk for `chunkBytes` (0: the ring allreduce's default for the device).
inline std::size_t chunkFloatsFor(Device device, std::size_t chunkBytes) {
  const std::size_t bytes = chunkBytes ? chunkBytes : RingAllreduce::defaultChunkBytes(device);
  return std::max<std::size_t>(1, bytes / sizeof(float));
}

inline void postSend(Transport& t, int peer, const float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.isend(peer, p + off, std::min(chunk, count - off) * sizeof(float)));
}

inline void postRecv(Transport& t, int peer, float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.irecv(peer, p + off, std::min(chunk, count - off) * sizeof(float)));
}

// Adds what arrives into p.
inline void postRecvReduce(Transport& t, int peer, float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.irecvReduce(peer, p + off, std::min(chunk, count - off)));
}

inline void waitAll(Requests& reqs) {
  for (auto& r : reqs) r->wait();
  reqs.clear();
}

// The state of a from-scratch collective: its transport, arguments, chunk (in floats), block
// (count / N: the blocked ops' unit) and the posts of the current step.
class P2PCollective : public Collective {
 public:
  P2PCollective(CommContext& ctx, const CollectiveArgs& a)
      : t_(ctx.transport), a_(a), chunk_(chunkFloatsFor(ctx.device(), a.chunkBytes)),
        m_(a.count / static_cast<std::size_t>(ctx.size())) {}

 protected:
  Transport& t_;
  CollectiveArgs a_;
  std::size_t chunk_, m_;
  Requests reqs_;
};

// The registry entry of from-scratch collective `Impl` (constructed from (ctx, args)).
template <typename Impl>
CollectiveAlgo fromScratchCollective(const char* op, const char* name, const char* description, int order,
                                     const char* color) {
  CollectiveAlgo a;
  a.op = op;
  a.name = name;
  a.origin = Origin::FromScratch;
  a.description = description;
  a.order = order;
  a.color = color;
  a.make = [](CommContext& ctx, const CollectiveArgs& args) -> std::unique_ptr<Collective> {
    return std::make_unique<Impl>(ctx, args);
  };
  return a;
}

}  // namespace tpb
