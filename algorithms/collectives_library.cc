// Library baselines for the collectives beyond allreduce, as allreduce_library.cc is for allreduce:
// the library's own collective on each device.
//  * CPU: c10d ProcessGroupGloo's broadcast, reduce, allgather, alltoall_base and send/recv, on
//    the run's shared Gloo process group (algorithms/gloo_group.h): the same rendezvous store, none
//    of tpbench's transports, so their traffic is not counted. LibTorch 1.13's ProcessGroupGloo
//    has no reduce_scatter, so there is none on the CPU.
//  * GPU: NCCL's ncclBroadcast, ncclReduce, ncclAllGather, ncclReduceScatter, and grouped
//    ncclSend/ncclRecv for alltoall and sendrecv, on the communicator and stream of the run's
//    nccl transport (startCollective: ordered after the default stream, waited under the
//    transport's timeout).
#include <functional>

#include "algorithms/gloo_group.h"
#include "common/error.h"
#include "core/registry.h"

#ifdef TPB_HAVE_NCCL
#include "comm/nccl/nccl_transport.h"
#endif

namespace tpb {

namespace {

at::Tensor view(const float* p, std::size_t count) {
  return at::from_blob(const_cast<float*>(p), {static_cast<int64_t>(count)}, at::TensorOptions().dtype(at::kFloat));
}

// One Gloo call per run(); `start` issues it on the group and returns its work item (or none).
// With one rank (or nothing to move) there is no group: `alone` does what the op means for N = 1.
class GlooCollective final : public Collective {
 public:
  using Start = std::function<c10::intrusive_ptr<c10d::Work>(compat::ProcessGroupBase&)>;
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
  GlooGroup pg_;
};

// What N = 1 means for the ops that copy: the input is the output.
std::function<void()> copyAlone(const CollectiveArgs& a) {
  return [a] { copyFloats(Device::Cpu, a.recv, a.send, a.count); };
}

#ifdef TPB_HAVE_NCCL
// NCCL calls on the nccl transport's communicator and stream; run() returns once they are done.
class NcclCollective final : public Collective {
 public:
  using Call = std::function<ncclResult_t(ncclComm_t, cudaStream_t)>;
  NcclCollective(CommContext& ctx, std::vector<Call> calls)
      : nccl_(ncclTransportOf(ctx.transport, "library collective")), calls_(std::move(calls)) {}
  void run() override {
    for (const auto& c : calls_) nccl_.runCollective("library collective", c);
  }
  // Every call queued on the transport's one stream without waiting: the last one's request
  // completes after all of them.
  std::unique_ptr<Request> start() override {
    std::unique_ptr<Request> last = std::make_unique<DoneRequest>();
    for (const auto& c : calls_) last = nccl_.startCollective("library collective", c);
    return last;
  }
  bool queuesOnDevice() const override { return true; }

 private:
  NcclTransport& nccl_;
  std::vector<Call> calls_;
};
#endif

using Factory = std::function<std::unique_ptr<Collective>(CommContext&, const CollectiveArgs&)>;

// The entry of op's library baseline: `gloo` on the CPU (null: none), `nccl` on GPUs; `cost` is
// the textbook algorithm it is modelled as.
CollectiveAlgo libraryAlgo(const char* op, const char* description, std::optional<CostFormula> cost, Factory gloo,
                           Factory nccl) {
  CollectiveAlgo a;
  a.op = op;
  a.cost = std::move(cost);
  a.name = "library";
  a.origin = Origin::Library;
  a.description = description;
  a.order = 2;
  a.color = "#9467bd";
  a.carrier = glooCarrier;
  const bool hasGloo = static_cast<bool>(gloo);
  a.unsupported = [hasGloo](Device d) -> std::string {
    if (d == Device::Cpu && !glooInThisBuild()) return noGlooReason();
    if (d == Device::Cpu) return hasGloo ? "" : "LibTorch 1.13's ProcessGroupGloo has no such collective";
#ifdef TPB_HAVE_NCCL
    return "";
#else
    return "this build has no NCCL";
#endif
  };
  a.make = [gloo, nccl](CommContext& ctx, const CollectiveArgs& args) -> std::unique_ptr<Collective> {
    if (ctx.device() == Device::Cuda) {
      TPB_CHECK(nccl, "no NCCL collective in this build");
      return nccl(ctx, args);
    }
    TPB_CHECK(gloo, "no Gloo collective for this op");
    return gloo(ctx, args);
  };
  return a;
}

#ifdef TPB_HAVE_NCCL
Factory ncclOf(std::function<std::vector<NcclCollective::Call>(CommContext&, const CollectiveArgs&)> calls) {
  return [calls](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
    return std::make_unique<NcclCollective>(ctx, calls(ctx, a));
  };
}
#define TPB_NCCL(...) ncclOf(__VA_ARGS__)
#else
#define TPB_NCCL(...) Factory()
#endif

CollectiveAlgo libraryBroadcast() {
  return libraryAlgo(
      "broadcast", "Gloo broadcast on CPU, ncclBroadcast on GPU",
      binomialTreeCost("modelled as a binomial tree"),
      [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
        auto t = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
        return std::make_unique<GlooCollective>(
            ctx, a,
            [t, a, rank = ctx.rank()](compat::ProcessGroupBase& pg) {
              if (rank == a.root) copyFloats(Device::Cpu, a.recv, a.send, a.count);  // no-op in place
              c10d::BroadcastOptions o;
              o.rootRank = a.root;
              return pg.broadcast(*t, o);
            },
            copyAlone(a));
      },
      TPB_NCCL([](CommContext&, const CollectiveArgs& a) {
        return std::vector<NcclCollective::Call>{[a](ncclComm_t c, cudaStream_t s) {
          return ncclBroadcast(a.send, a.recv, a.count, ncclFloat, a.root, c, s);
        }};
      }));
}

CollectiveAlgo libraryReduce() {
  return libraryAlgo(
      "reduce", "Gloo reduce (sum) on CPU, ncclReduce on GPU",
      binomialTreeCost("modelled as a binomial tree"),
      [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
        auto t = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
        return std::make_unique<GlooCollective>(
            ctx, a,
            [t, a](compat::ProcessGroupBase& pg) {
              copyFloats(Device::Cpu, a.recv, a.send, a.count);  // Gloo reduces in place
              c10d::ReduceOptions o;
              o.rootRank = a.root;
              return pg.reduce(*t, o);
            },
            copyAlone(a));
      },
      TPB_NCCL([](CommContext&, const CollectiveArgs& a) {
        return std::vector<NcclCollective::Call>{[a](ncclComm_t c, cudaStream_t s) {
          return ncclReduce(a.send, a.recv, a.count, ncclFloat, ncclSum, a.root, c, s);
        }};
      }));
}

CollectiveAlgo libraryAllgather() {
  return libraryAlgo(
      "allgather", "Gloo allgather on CPU, ncclAllGather on GPU",
      blockStepsCost("modelled as a ring"),
      [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
        const int n = ctx.size();
        const std::size_t m = a.count / static_cast<std::size_t>(n);
        auto in = std::make_shared<std::vector<at::Tensor>>(1, view(a.send, m));
        auto out = std::make_shared<std::vector<std::vector<at::Tensor>>>(1);
        for (int b = 0; b < n; ++b) (*out)[0].push_back(view(a.recv + b * m, m));
        return std::make_unique<GlooCollective>(
            ctx, a, [in, out](compat::ProcessGroupBase& pg) { return pg.allgather(*out, *in); }, copyAlone(a));
      },
      TPB_NCCL([](CommContext& ctx, const CollectiveArgs& a) {
        const std::size_t m = a.count / static_cast<std::size_t>(ctx.size());
        return std::vector<NcclCollective::Call>{[a, m](ncclComm_t c, cudaStream_t s) {
          return ncclAllGather(a.send, a.recv, m, ncclFloat, c, s);
        }};
      }));
}

CollectiveAlgo libraryReduceScatter() {
  return libraryAlgo("reduce_scatter", "ncclReduceScatter on GPU (none on CPU: Gloo in LibTorch 1.13 lacks it)",
                     blockStepsCost("modelled as a ring"), Factory(), TPB_NCCL([](CommContext& ctx, const CollectiveArgs& a) {
                       const std::size_t m = a.count / static_cast<std::size_t>(ctx.size());
                       return std::vector<NcclCollective::Call>{[a, m](ncclComm_t c, cudaStream_t s) {
                         return ncclReduceScatter(a.send, a.recv, m, ncclFloat, ncclSum, c, s);
                       }};
                     }));
}

CollectiveAlgo libraryAlltoall() {
  return libraryAlgo(
      "alltoall", "Gloo alltoall_base on CPU, grouped ncclSend/ncclRecv on GPU",
      blockStepsCost("modelled as pairwise exchange"),
      [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
        auto in = std::make_shared<at::Tensor>(view(a.send, a.count));
        auto out = std::make_shared<at::Tensor>(view(a.recv, a.count));
        auto splits = std::make_shared<std::vector<int64_t>>();  // empty: equal blocks
        return std::make_unique<GlooCollective>(
            ctx, a,
            [in, out, splits](compat::ProcessGroupBase& pg) { return pg.alltoall_base(*out, *in, *splits, *splits); },
            copyAlone(a));
      },
      TPB_NCCL([](CommContext& ctx, const CollectiveArgs& a) {
        const int n = ctx.size();
        const std::size_t m = a.count / static_cast<std::size_t>(n);
        return std::vector<NcclCollective::Call>{[a, m, n](ncclComm_t c, cudaStream_t s) {
          ncclResult_t r = ncclGroupStart();
          for (int p = 0; p < n && r == ncclSuccess; ++p) {
            r = ncclSend(a.send + p * m, m, ncclFloat, p, c, s);
            if (r == ncclSuccess) r = ncclRecv(a.recv + p * m, m, ncclFloat, p, c, s);
          }
          const ncclResult_t end = ncclGroupEnd();
          return r != ncclSuccess ? r : end;
        }};
      }));
}

// Ping-pong as algorithms/sendrecv_ping_pong.cc: ranks 2k and 2k+1 swap buffers, one after the other.
CollectiveAlgo librarySendrecv() {
  return libraryAlgo(
      "sendrecv", "Gloo send/recv ping-pong on CPU, ncclSend/ncclRecv on GPU",
      roundTripCost(),
      [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
        auto s = std::make_shared<std::vector<at::Tensor>>(1, view(a.send, a.count));
        auto r = std::make_shared<std::vector<at::Tensor>>(1, view(a.recv, a.count));
        const int rank = ctx.rank(), partner = rank ^ 1, n = ctx.size();
        const auto timeout = ctx.timeout();
        return std::make_unique<GlooCollective>(
            ctx, a,
            [=](compat::ProcessGroupBase& pg) -> c10::intrusive_ptr<c10d::Work> {
              if (partner >= n) return {};
              if (rank % 2 == 0) {
                waitWork(pg.send(*s, partner, 0), timeout, "gloo send");
                return pg.recv(*r, partner, 0);
              }
              waitWork(pg.recv(*r, partner, 0), timeout, "gloo recv");
              return pg.send(*s, partner, 0);
            },
            [] {});
      },
      TPB_NCCL([](CommContext& ctx, const CollectiveArgs& a) {
        const int rank = ctx.rank(), partner = rank ^ 1;
        std::vector<NcclCollective::Call> calls;
        if (partner >= ctx.size()) return calls;
        auto send = [a, partner](ncclComm_t c, cudaStream_t s) {
          return ncclSend(a.send, a.count, ncclFloat, partner, c, s);
        };
        auto recv = [a, partner](ncclComm_t c, cudaStream_t s) {
          return ncclRecv(a.recv, a.count, ncclFloat, partner, c, s);
        };
        if (rank % 2 == 0) calls = {send, recv};
        else calls = {recv, send};
        return calls;
      }));
}

}  // namespace

TPB_REGISTER_COLLECTIVE(libraryBroadcast);
TPB_REGISTER_COLLECTIVE(libraryReduce);
TPB_REGISTER_COLLECTIVE(libraryAllgather);
TPB_REGISTER_COLLECTIVE(libraryReduceScatter);
TPB_REGISTER_COLLECTIVE(libraryAlltoall);
TPB_REGISTER_COLLECTIVE(librarySendrecv);

}  // namespace tpb
