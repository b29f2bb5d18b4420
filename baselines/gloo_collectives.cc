// Library baselines for the collectives beyond allreduce: c10d ProcessGroupGloo's own broadcast,
// reduce, allgather, alltoall and send/recv (ping-pong), on the run's shared Gloo process group
// (baselines/gloo_group.h), over the same rendezvous store but none of tpbench's transports —
// so their traffic is not counted. CPU only: on GPUs NCCL's collectives would be the baseline,
// and Debian's LibTorch has no ProcessGroupNCCL (library_allreduce.cc calls NCCL directly).
// Gloo's reduce_scatter is not offered: LibTorch 1.13's ProcessGroupGloo does not implement it.
#include <functional>

#include "baselines/gloo_group.h"
#include "common/error.h"
#include "core/registry.h"

namespace tpb {

namespace {

at::Tensor view(const float* p, std::size_t count) {
  return at::from_blob(const_cast<float*>(p), {static_cast<int64_t>(count)}, at::TensorOptions().dtype(at::kFloat));
}

// One library call per run(); `start` issues it on the group and returns its work item. With one
// rank (or nothing to move) there is no group: `alone` does what the op means for N = 1.
class GlooCollective final : public Collective {
 public:
  using Start = std::function<c10::intrusive_ptr<c10d::Work>(c10d::ProcessGroupGloo&)>;
  GlooCollective(CommContext& ctx, const CollectiveArgs& a, Start start, std::function<void()> alone)
      : timeout_(ctx.timeout()), start_(std::move(start)), alone_(std::move(alone)) {
    if (ctx.size() > 1 && a.count > 0) pg_ = glooGroup(ctx);
  }
  void run() override {
    if (!pg_) return alone_();
    if (auto w = start_(*pg_)) waitWork(w, timeout_, "gloo collective");
  }

 private:
  std::chrono::milliseconds timeout_;
  Start start_;
  std::function<void()> alone_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

std::string cpuOnly(Device d) {
  return d == Device::Cpu ? std::string() : std::string("the Gloo baselines run on the CPU only");
}

CollectiveAlgo glooAlgo(const char* op, const char* description,
                        std::function<std::unique_ptr<Collective>(CommContext&, const CollectiveArgs&)> make) {
  CollectiveAlgo a;
  a.op = op;
  a.name = "library";
  a.origin = Origin::Library;
  a.description = description;
  a.order = 2;
  a.color = "#9467bd";
  a.unsupported = cpuOnly;
  a.make = std::move(make);
  return a;
}

CollectiveAlgo glooBroadcast() {
  return glooAlgo("broadcast", "c10d ProcessGroupGloo broadcast", [](CommContext& ctx, const CollectiveArgs& a) {
    auto t = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
    return std::make_unique<GlooCollective>(
        ctx, a,
        [t, a, rank = ctx.rank()](c10d::ProcessGroupGloo& pg) {
          if (rank == a.root) copyFloats(Device::Cpu, a.recv, a.send, a.count);  // no-op in place
          c10d::BroadcastOptions o;
          o.rootRank = a.root;
          return pg.broadcast(*t, o);
        },
        [a] { copyFloats(Device::Cpu, a.recv, a.send, a.count); });
  });
}

CollectiveAlgo glooReduce() {
  return glooAlgo("reduce", "c10d ProcessGroupGloo reduce (sum)", [](CommContext& ctx, const CollectiveArgs& a) {
    auto t = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
    return std::make_unique<GlooCollective>(
        ctx, a,
        [t, a](c10d::ProcessGroupGloo& pg) {
          copyFloats(Device::Cpu, a.recv, a.send, a.count);  // Gloo reduces in place
          c10d::ReduceOptions o;
          o.rootRank = a.root;
          return pg.reduce(*t, o);
        },
        [a] { copyFloats(Device::Cpu, a.recv, a.send, a.count); });
  });
}

CollectiveAlgo glooAllgather() {
  return glooAlgo("allgather", "c10d ProcessGroupGloo allgather", [](CommContext& ctx, const CollectiveArgs& a) {
    const int n = ctx.size();
    const std::size_t m = a.count / static_cast<std::size_t>(n);
    auto in = std::make_shared<std::vector<at::Tensor>>(1, view(a.send, m));
    auto out = std::make_shared<std::vector<std::vector<at::Tensor>>>(1);
    for (int b = 0; b < n; ++b) (*out)[0].push_back(view(a.recv + b * m, m));
    return std::make_unique<GlooCollective>(
        ctx, a, [in, out](c10d::ProcessGroupGloo& pg) { return pg.allgather(*out, *in); },
        [a] { copyFloats(Device::Cpu, a.recv, a.send, a.count); });
  });
}

CollectiveAlgo glooAlltoall() {
  return glooAlgo("alltoall", "c10d ProcessGroupGloo alltoall_base (equal blocks)",
                  [](CommContext& ctx, const CollectiveArgs& a) {
                    auto in = std::make_shared<at::Tensor>(view(a.send, a.count));
                    auto out = std::make_shared<at::Tensor>(view(a.recv, a.count));
                    auto splits = std::make_shared<std::vector<int64_t>>();  // empty: equal blocks
                    return std::make_unique<GlooCollective>(
                        ctx, a,
                        [in, out, splits](c10d::ProcessGroupGloo& pg) {
                          return pg.alltoall_base(*out, *in, *splits, *splits);
                        },
                        [a] { copyFloats(Device::Cpu, a.recv, a.send, a.count); });
                  });
}

// Ping-pong as strategies/ping_pong.cc, on Gloo's send/recv: ranks 2k and 2k+1 swap buffers.
CollectiveAlgo glooSendrecv() {
  return glooAlgo("sendrecv", "c10d ProcessGroupGloo send/recv ping-pong", [](CommContext& ctx, const CollectiveArgs& a) {
    auto s = std::make_shared<std::vector<at::Tensor>>(1, view(a.send, a.count));
    auto r = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
    const int rank = ctx.rank(), partner = rank ^ 1, n = ctx.size();
    const auto timeout = ctx.timeout();
    return std::make_unique<GlooCollective>(
        ctx, a,
        [=](c10d::ProcessGroupGloo& pg) -> c10::intrusive_ptr<c10d::Work> {
          if (partner >= n) return {};
          if (rank % 2 == 0) {
            waitWork(pg.send(*s, partner, 0), timeout, "gloo send");
            return pg.recv(*r, partner, 0);
          }
          waitWork(pg.recv(*r, partner, 0), timeout, "gloo recv");
          return pg.send(*s, partner, 0);
        },
        [] {});
  });
}

}  // namespace

TPB_REGISTER_COLLECTIVE(glooBroadcast);
TPB_REGISTER_COLLECTIVE(glooReduce);
TPB_REGISTER_COLLECTIVE(glooAllgather);
TPB_REGISTER_COLLECTIVE(glooAlltoall);
TPB_REGISTER_COLLECTIVE(glooSendrecv);

}  // namespace tpb
