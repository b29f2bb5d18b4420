// workload/evaluate.cc — batched, gradient-free evaluation.
#include "workload/evaluate.h"

#include <torch/torch.h>

#include <algorithm>

#include "common/error.h"

namespace tpb {

EvalResult evaluate(TrainableImpl& model, const Dataset& data, std::size_t batch) {
  TPB_CHECK(batch > 0, "evaluation batch size must be positive");
  const std::size_t n = data.size();
  TPB_CHECK(n > 0, "cannot evaluate on an empty dataset");
  torch::NoGradGuard noGrad;
  const bool training = model.is_training();
  model.eval();
  const auto params = model.parameters();
  const torch::Device device = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  double lossSum = 0.0;
  std::int64_t correct = 0, predictions = 0;
  for (std::size_t begin = 0; begin < n; begin += batch) {
    const auto len = static_cast<std::int64_t>(std::min(batch, n - begin));
    const auto start = static_cast<std::int64_t>(begin);
    auto x = data.images.narrow(0, start, len).to(device);
    auto y = data.labels.narrow(0, start, len).to(device);
    auto output = model.forward(x);
    lossSum += model.loss(output, y, /*sum=*/true).item<double>();
    correct += model.correct(output, y).item<std::int64_t>();
    predictions += y.numel();
  }
  if (training) model.train();
  return EvalResult{lossSum / static_cast<double>(predictions),
                    static_cast<double>(correct) / static_cast<double>(predictions)};
}

}  // namespace tpb
