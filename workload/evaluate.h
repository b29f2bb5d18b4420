// workload/evaluate.h — test-set loss and accuracy of a model, the per-epoch quality metric every
// strategy records (test_accuracy in the results JSON).
#pragma once

#include <cstddef>

#include "workload/dataset.h"
#include "workload/model.h"

namespace tpb {

struct EvalResult {
  double loss;      // mean cross-entropy over the samples
  double accuracy;  // fraction of samples whose arg-max logit is the label, in [0, 1]
};

// Runs `data` through `model` in batches of `batch` under NoGradGuard (inputs are moved to the
// model's device). Throws tpb::Error on an empty dataset or batch == 0.
EvalResult evaluate(Mlp& model, const Dataset& data, std::size_t batch = 1000);

}  // namespace tpb
