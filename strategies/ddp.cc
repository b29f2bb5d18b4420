// `ddp` (also `ring_all_reduce_builtin`): PyTorch DistributedDataParallel's algorithm, on c10d
// ProcessGroupGloo on the CPU and on NCCL (ncclAllReduce on the nccl transport's communicator
// and stream) on GPUs.
//
//  * At start, rank 0's weights are broadcast, so every replica starts identical.
//  * Gradients are grouped into buckets filled in REVERSE parameter order — the order in which
//    backward produces them — by PyTorch's rule: a bucket closes once it holds at least 1 MiB
//    (the first) or --bucket_mb MiB (the others).
//  * An autograd hook on every parameter copies its gradient into its bucket; when the last
//    gradient of a bucket arrives, that bucket's allreduce is launched asynchronously
//    (ProcessGroupGloo runs it on its own threads; on a GPU it is queued on the communication
//    stream behind the bucket's copies), so communication of late layers overlaps the backward
//    of earlier ones.
//  * Before the optimizer step every bucket's allreduce is waited for, in launch order, and the
//    sum is divided by the world size.
// The default MLP (0.67 M parameters = 2.7 MB) makes two buckets at any --bucket_mb up to 1.6:
// the first closes after fc1.weight (1.07 MB), the second takes fc0; --workload trains larger
// networks, where --bucket_mb decides how many buckets overlap the backward.
#include <torch/torch.h>

#include <atomic>
#include <deque>

#include "algorithms/gloo_group.h"
#include "comm/cuda/devices.h"
#include "common/error.h"
#include "common/trace.h"
#include "core/registry.h"
#include "core/ddp_buckets.h"
#include "workload/train.h"

#ifdef TPB_HAVE_NCCL
#include "comm/nccl/nccl_transport.h"
#endif

namespace tpb {

namespace {

// What DdpSync needs from a collective library: a broadcast from rank 0 and an asynchronous
// in-place sum per bucket, waited for later. `doneNs`, when not null, receives the steady
// clock (ns) at which the library completed the sum, where the library can tell (a trace
// draws the bucket's allreduce up to then); it stays 0 where it cannot.
class BucketComm {
 public:
  virtual ~BucketComm() = default;
  virtual void broadcastFromRoot(torch::Tensor flat) = 0;
  virtual void start(std::size_t bucket, torch::Tensor slice, std::atomic<std::int64_t>* doneNs) = 0;
  virtual void wait(std::size_t bucket) = 0;
};

class GlooBucketComm final : public BucketComm {
 public:
  explicit GlooBucketComm(CommContext& ctx) : timeout_(ctx.timeout()), pg_(glooGroup(ctx)) {}
  void broadcastFromRoot(torch::Tensor flat) override {
    std::vector<at::Tensor> t{flat};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    waitWork(pg_->broadcast(t, o), timeout_, "ddp initial broadcast");
  }
  void start(std::size_t bucket, torch::Tensor slice, std::atomic<std::int64_t>* doneNs) override {
    if (work_.size() <= bucket) work_.resize(bucket + 1);
    std::vector<at::Tensor> t{slice};
    work_[bucket] = pg_->allreduce(t);  // asynchronous: Gloo's threads run it
    // The future completes on Gloo's thread as soon as the sum is there, which can be long
    // before wait() is called: that moment is what shows how much of it backward hid.
    if (doneNs)
      work_[bucket]->getFuture()->addCallback([doneNs](c10::ivalue::Future&) { doneNs->store(trace::nowNs()); });
  }
  void wait(std::size_t bucket) override {
    waitWork(work_.at(bucket), timeout_, "ddp bucket allreduce");
    work_[bucket].reset();
  }

 private:
  std::chrono::milliseconds timeout_;
  GlooGroup pg_;
  std::vector<c10::intrusive_ptr<c10d::Work>> work_;
};

#ifdef TPB_HAVE_NCCL
// On the run's nccl transport (its communicator and stream, like the `library` allreduce): each
// collective is queued behind the default stream's work, so a bucket is summed only once the
// hooks' copies into it have run, while the host goes on with backward.
class NcclBucketComm final : public BucketComm {
 public:
  explicit NcclBucketComm(CommContext& ctx) : nccl_(ncclTransportOf(ctx.transport, "ddp")) {}
  void broadcastFromRoot(torch::Tensor flat) override {
    float* p = flat.data_ptr<float>();
    const auto n = static_cast<std::size_t>(flat.numel());
    nccl_.runCollective("ddp initial broadcast (ncclBroadcast)", [p, n](ncclComm_t c, cudaStream_t s) {
      return ncclBroadcast(p, p, n, ncclFloat, 0, c, s);
    });
  }
  void start(std::size_t bucket, torch::Tensor slice, std::atomic<std::int64_t>*) override {
    if (reqs_.size() <= bucket) reqs_.resize(bucket + 1);
    float* p = slice.data_ptr<float>();
    const auto n = static_cast<std::size_t>(slice.numel());
    reqs_[bucket] = nccl_.startCollective("ddp bucket allreduce (ncclAllReduce)",
                                           [p, n](ncclComm_t c, cudaStream_t s) {
                                             return ncclAllReduce(p, p, n, ncclFloat, ncclSum, c, s);
                                           });
  }
  void wait(std::size_t bucket) override {
    reqs_.at(bucket)->wait();
    reqs_[bucket].reset();
  }

 private:
  NcclTransport& nccl_;
  std::vector<std::unique_ptr<Request>> reqs_;
};
#endif

std::unique_ptr<BucketComm> makeBucketComm(CommContext& ctx) {
#ifdef TPB_HAVE_NCCL
  if (ctx.device() == Device::Cuda) return std::make_unique<NcclBucketComm>(ctx);
#endif
  TPB_CHECK(ctx.device() == Device::Cpu, "ddp: no GPU backend in this build (NCCL was not found)");
  return std::make_unique<GlooBucketComm>(ctx);
}

class DdpSync final : public GradSync {
 public:
  DdpSync(CommContext& ctx, double bucketMb) : ctx_(ctx), bucketBytes_(bucketMb * 1024 * 1024) {}

  void attach(Replica& r) override {
    params_ = r.params;
    std::size_t total = 0;
    for (auto& p : params_) {
      offsets_.push_back(total);
      total += static_cast<std::size_t>(p.numel());
    }
    offsets_.push_back(total);
    flat_ = torch::zeros({static_cast<int64_t>(total)}, r.flatParams->flat().options());
    if (ctx_.size() > 1) {
      comm_ = makeBucketComm(ctx_);
      comm_->broadcastFromRoot(r.flatParams->flat());
    }
    // Buckets in reverse parameter order, each a contiguous slice of flat_, cut by PyTorch's
    // rule (core/ddp_buckets.h).
    bucketOf_.assign(params_.size(), 0);
    std::vector<double> bytes;
    for (const auto& p : params_) bytes.push_back(p.numel() * 4.0);
    std::size_t begin = params_.size();
    for (const std::size_t first : ddpBucketFirsts(bytes, bucketBytes_)) {
      for (std::size_t i = first; i < begin; ++i) bucketOf_[i] = buckets_.size();
      Bucket& b = buckets_.emplace_back();
      b.lo = offsets_[first];
      b.hi = offsets_[begin];
      b.params = begin - first;
      begin = first;
    }
    for (std::size_t i = 0; i < params_.size(); ++i) {
      params_[i].register_hook([this, i](torch::Tensor grad) { onGrad(i, grad); });
    }
  }

  void beforeBackward() override {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();  // hooks own the gradients
    for (auto& b : buckets_) b.pending = b.params;
    launched_.clear();
    averaged_ = false;
  }

  void finish() override {
    TPB_CHECK(launched_.size() == buckets_.size(),
              "ddp: only " << launched_.size() << " of " << buckets_.size()
                           << " buckets became ready (a parameter got no gradient)");
    if (ctx_.size() == 1) return;
    for (std::size_t k : launched_) {
      comm_->wait(k);
      if (trace::enabled()) {
        // From launch (in the hook, during backward) to the library's completion; where the
        // library cannot say, to the end of the wait (an upper bound).
        const Bucket& b = buckets_[k];
        const std::int64_t done = b.doneNs.load();
        trace::record("bucket allreduce", trace::Category::Comm, b.launchNs, done > 0 ? done : trace::nowNs(),
                      "bucket", static_cast<std::int64_t>(k), trace::Track::Comm);
      }
    }
  }

  // The mean over ranks, taken when the update asks for it rather than at the end of finish():
  // it is computation, timed with the optimizer; inside finish()'s span it would be drawn as
  // the host waiting on past the buckets it waits for.
  torch::Tensor grads() override {
    if (!averaged_ && ctx_.size() > 1) scaleInPlace(flat_, 1.0f / static_cast<float>(ctx_.size()));
    averaged_ = true;
    return flat_;
  }
  // The host waits for the buckets launched during backward: the communication it did not hide.
  const char* traceName() const override { return "bucket wait"; }
  trace::Category traceCategory() const override { return trace::Category::Wait; }

  std::size_t bucketCount() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::size_t lo = 0, hi = 0, params = 0, pending = 0;
    std::int64_t launchNs = 0;              // traced runs: when the hook launched the allreduce
    std::atomic<std::int64_t> doneNs{0};    // and when the library completed it (0: not known)
  };

  void onGrad(std::size_t i, const torch::Tensor& grad) {
    torch::NoGradGuard noGrad;
    flat_.narrow(0, static_cast<int64_t>(offsets_[i]), static_cast<int64_t>(offsets_[i + 1] - offsets_[i]))
        .copy_(grad.reshape({-1}));
    Bucket& b = buckets_[bucketOf_[i]];
    if (--b.pending > 0) return;
    launched_.push_back(bucketOf_[i]);
    if (ctx_.size() == 1) return;
    std::atomic<std::int64_t>* done = nullptr;
    if (trace::enabled()) {
      b.launchNs = trace::nowNs();
      b.doneNs.store(0);
      done = &b.doneNs;
    }
    // Asynchronous: overlaps the rest of backward.
    comm_->start(bucketOf_[i], flat_.narrow(0, static_cast<int64_t>(b.lo), static_cast<int64_t>(b.hi - b.lo)), done);
  }

  CommContext& ctx_;
  double bucketBytes_;
  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> offsets_, bucketOf_, launched_;
  std::deque<Bucket> buckets_;  // a deque: a Bucket holds an atomic and never moves
  torch::Tensor flat_;
  std::unique_ptr<BucketComm> comm_;
  bool averaged_ = false;  // grads() took this step's mean
};

TrainStrategy ddpStrategy() {
  TrainStrategy s;
  s.name = "ddp";
  s.bucketed = true;
  s.slowsRanks = true;
  s.aliases = {"ring_all_reduce_builtin"};
  s.origin = Origin::BuiltinEquivalent;
  s.description =
      "DDP's algorithm: reverse-order gradient buckets (--bucket_mb), async allreduce from autograd hooks (c10d Gloo on CPU, NCCL on GPU)";
  s.order = 4;
  s.color = "#d62728";
  s.carrier = glooCarrier;
  s.unsupported = [](Device d, int) {
    if (d == Device::Cpu) return noGlooReason();  // "" where this build has Gloo
    return ncclCompiled() ? std::string() : std::string("this build has no NCCL");
  };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    if (cfg.bucketMb <= 0) TPB_THROW(UsageError, "--bucket_mb: must be positive, got " << cfg.bucketMb);
    DdpSync sync(ctx, cfg.bucketMb);
    return trainReplicated(&ctx.transport, cfg, sync, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(ddpStrategy);

}  // namespace tpb
