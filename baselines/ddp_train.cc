// `ddp` (also `ring_all_reduce_builtin`): PyTorch DistributedDataParallel's algorithm on c10d.
//
//  * At start, rank 0's weights are broadcast, so every replica starts identical.
//  * Gradients are grouped into buckets of about --bucket_mb MiB, filled in REVERSE parameter
//    order — the order in which backward produces them.
//  * An autograd hook on every parameter copies its gradient into its bucket; when the last
//    gradient of a bucket arrives, that bucket's allreduce is launched asynchronously
//    (ProcessGroupGloo runs it on its own threads), so communication of late layers overlaps
//    the backward of earlier ones.
//  * Before the optimizer step every bucket's allreduce is waited for, in launch order, and the
//    sum is divided by the world size.
// The model here is small (0.67 M parameters = 2.7 MB at the defaults): with the default 25 MiB
// one bucket holds everything and there is nothing to overlap, exactly as with real DDP;
// smaller --bucket_mb gives several buckets.
#include <torch/torch.h>

#include "baselines/gloo_group.h"
#include "common/error.h"
#include "strategies/train_strategy.h"

namespace tpb {

namespace {

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
    flat_ = torch::zeros({static_cast<int64_t>(total)}, torch::kFloat);
    if (ctx_.size() > 1) {
      pg_ = glooGroup(ctx_);
      std::vector<at::Tensor> w{r.flatParams->flat()};
      c10d::BroadcastOptions o;
      o.rootRank = 0;
      waitWork(pg_->broadcast(w, o), ctx_.timeout(), "ddp initial broadcast");
    }
    // Buckets in reverse parameter order; each is a contiguous slice of flat_.
    bucketOf_.assign(params_.size(), 0);
    std::size_t begin = params_.size();
    while (begin > 0) {
      std::size_t first = begin - 1;
      double bytes = static_cast<double>(params_[first].numel()) * 4;
      while (first > 0 && bytes + params_[first - 1].numel() * 4.0 <= bucketBytes_) {
        --first;
        bytes += params_[first].numel() * 4.0;
      }
      Bucket b;
      b.lo = offsets_[first];
      b.hi = offsets_[begin];
      b.params = begin - first;
      for (std::size_t i = first; i < begin; ++i) bucketOf_[i] = buckets_.size();
      buckets_.push_back(b);
      begin = first;
    }
    for (std::size_t i = 0; i < params_.size(); ++i) {
      params_[i].register_hook([this, i](torch::Tensor grad) { onGrad(i, grad); });
    }
  }

  void beforeBackward() override {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();  // hooks own the gradients
    for (auto& b : buckets_) {
      b.pending = b.params;
      b.work.reset();
    }
    launched_.clear();
  }

  void finish() override {
    TPB_CHECK(launched_.size() == buckets_.size(),
              "ddp: only " << launched_.size() << " of " << buckets_.size()
                           << " buckets became ready (a parameter got no gradient)");
    if (ctx_.size() == 1) return;
    for (std::size_t k : launched_) waitWork(buckets_[k].work, ctx_.timeout(), "ddp bucket allreduce");
    flat_.mul_(1.0 / ctx_.size());
  }

  float* grads() override { return flat_.data_ptr<float>(); }

  std::size_t bucketCount() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::size_t lo = 0, hi = 0, params = 0, pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };

  void onGrad(std::size_t i, const torch::Tensor& grad) {
    flat_.narrow(0, static_cast<int64_t>(offsets_[i]), static_cast<int64_t>(offsets_[i + 1] - offsets_[i]))
        .copy_(grad.reshape({-1}));
    Bucket& b = buckets_[bucketOf_[i]];
    if (--b.pending > 0) return;
    launched_.push_back(bucketOf_[i]);
    if (ctx_.size() == 1) return;
    std::vector<at::Tensor> t{flat_.narrow(0, static_cast<int64_t>(b.lo), static_cast<int64_t>(b.hi - b.lo))};
    b.work = pg_->allreduce(t);  // asynchronous: overlaps the rest of backward
  }

  CommContext& ctx_;
  double bucketBytes_;
  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> offsets_, bucketOf_, launched_;
  std::vector<Bucket> buckets_;
  torch::Tensor flat_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace

TrainStrategy ddpStrategy() {
  TrainStrategy s;
  s.name = "ddp";
  s.aliases = {"ring_all_reduce_builtin"};
  s.origin = "builtin-equivalent";
  s.description =
      "DDP's algorithm on c10d Gloo: reverse-order gradient buckets (--bucket_mb), async allreduce from autograd hooks";
  s.processes = [](int n) { return n; };
  s.unsupported = [](Device d, int) {
    return d == Device::Cpu ? std::string() : std::string("ProcessGroupNCCL is not built yet");
  };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    if (cfg.bucketMb <= 0) TPB_THROW(UsageError, "--bucket_mb: must be positive, got " << cfg.bucketMb);
    DdpSync sync(ctx, cfg.bucketMb);
    return trainReplicated(&ctx.transport, cfg, sync, onEpoch);
  };
  return s;
}

}  // namespace tpb
