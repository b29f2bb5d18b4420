// workload/evaluate.h — test-set loss and accuracy of a model, the per-epoch quality metric every
// strategy records (test_accuracy in the results JSON).
#pragma once

#include <cstddef>

#include "workload/dataset.h"
#include "workload/model.h"

namespace tpb {

struct EvalResult {
  double loss;      // mean cross-entropy over the predictions (samples, or a language model's tokens)
  double accuracy;  // fraction of predictions whose arg-max logit is the target, in [0, 1]
};

// Runs `data` through `model` in batches of `batch` under NoGradGuard and in eval mode (a
// BatchNorm uses its running statistics; training mode is restored after), inputs moved to the
// model's device. Throws tpb::Error on an empty dataset or batch == 0.
EvalResult evaluate(TrainableImpl& model, const Dataset& data, std::size_t batch = 1000);

}  // namespace tpb
