// tpbench_handloop — the yardstick for the harness's overhead: a plain, hand-written LibTorch
// training loop (nn::Sequential MLP 784-512-512-10, optim::SGD, cross-entropy, the same
// synthetic data) timed per epoch, to set beside `tpbench run --strategy single` on the same
// settings.
//
//   build/bench/tpbench_handloop [train_size=8192] [batch=64] [epochs=5]
//
// Prints samples/s of every epoch and their median. One intra-op thread, as tpbench's ranks.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "workload/dataset.h"

int main(int argc, char** argv) {
  const long trainSize = argc > 1 ? std::atol(argv[1]) : 8192;
  const long batch = argc > 2 ? std::atol(argv[2]) : 64;
  const int epochs = argc > 3 ? std::atoi(argv[3]) : 5;
  at::set_num_threads(1);
  const tpb::DataSplit data = tpb::loadDataset("synthetic", static_cast<std::size_t>(trainSize), 1);
  torch::manual_seed(1);
  torch::nn::Sequential model(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                              torch::nn::ReLU(), torch::nn::Linear(512, 10));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  const long n = data.train.images.size(0);
  std::vector<double> rates;
  for (int e = 0; e < epochs; ++e) {
    const torch::Tensor perm = torch::randperm(n, torch::kLong);
    const auto t0 = std::chrono::steady_clock::now();
    for (long b = 0; b < n; b += batch) {
      const torch::Tensor idx = perm.slice(0, b, std::min(b + batch, n));
      const torch::Tensor x = data.train.images.index_select(0, idx);
      const torch::Tensor y = data.train.labels.index_select(0, idx);
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      opt.step();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(n) / s);
    std::printf("hand-written LibTorch loop: epoch %d: %.0f samples/s\n", e + 1, rates.back());
  }
  std::sort(rates.begin(), rates.end());
  std::printf("hand-written LibTorch loop: median %.0f samples/s over %d epochs (train_size %ld, batch %ld)\n",
              rates[rates.size() / 2], epochs, n, batch);
  return 0;
}
