// workload/evaluate.cc — batched, gradient-free evaluation.
#include "workload/evaluate.h"

#include <torch/torch.h>

#include <algorithm>

#include "common/error.h"

namespace tpb {

EvalResult evaluate(Mlp& model, const Dataset& data, std::size_t batch) {
  TPB_CHECK(batch > 0, "evaluation batch size must be positive");
  const std::size_t n = data.size();
  TPB_CHECK(n > 0, "cannot evaluate on an empty dataset");
  torch::NoGradGuard noGrad;
  const auto params = model->parameters();
  const torch::Device device = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  double lossSum = 0.0;
  std::int64_t correct = 0;
  for (std::size_t begin = 0; begin < n; begin += batch) {
    const auto len = static_cast<std::int64_t>(std::min(batch, n - begin));
    const auto start = static_cast<std::int64_t>(begin);
    auto x = data.images.narrow(0, start, len).to(device);
    auto y = data.labels.narrow(0, start, len).to(device);
    auto logits = model->forward(x);
    lossSum += torch::nn::functional::cross_entropy(
                   logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                   .item<double>();
    correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
  }
  return EvalResult{lossSum / static_cast<double>(n), static_cast<double>(correct) / static_cast<double>(n)};
}

}  // namespace tpb
