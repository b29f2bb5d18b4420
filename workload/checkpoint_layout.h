// workload/checkpoint_layout.h — what a checkpoint says about the model it holds, compared with
// the model of the run that resumes it: the format's version and every tensor's name and sizes.
// LibTorch-free, so that the fuzzer runs it under ASan and UBSan on what a file claims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpb {

// The format this build writes. Version 1 (the MLP only, no "shapes") is still read.
constexpr const char* kCheckpointFormat = "tpbench.checkpoint/2";
constexpr int kCheckpointVersion = 2;

// The version of `format` ("tpbench.checkpoint/<digits>"), or -1 when it is no tpbench format.
int checkpointVersion(const std::string& format);

// Why this build cannot read a file of `format`: "" when it can (version 1 or 2), else one
// clause ("written by a newer tpbench (tpbench.checkpoint/3; this one reads up to /2)", or "not a
// tpbench checkpoint ('format' is ...)").
std::string formatProblem(const std::string& format);

// One tensor of a checkpoint's model: its state_dict name and sizes.
struct TensorLayout {
  std::string name;
  std::vector<std::int64_t> sizes;
};

// The model's parameters in the flat order gradients use (orderedParameters), then the buffers
// that shape its output (BatchNorm's running statistics), each under its state_dict name.
using ModelLayout = std::vector<TensorLayout>;

// "16x1x3x3"; "a scalar" for no sizes; the first 16 sizes of more.
std::string sizesText(const std::vector<std::int64_t>& sizes);

// Elements of a tensor of `sizes`, or -1 when a size is negative or the product overflows.
std::int64_t elementCount(const std::vector<std::int64_t>& sizes);

// The first way the layout a file records differs from the run's, as one clause naming the tensor
// ("its block1.conv1.weight is 16x16x3x3, this run's is 32x16x3x3"; "it holds 12 tensors, this
// run's model 14"), or "" when they are the same. `model` says whose the run's model is
// ("this run's --workload resnet:...").
std::string layoutDifference(const ModelLayout& file, const ModelLayout& run, const std::string& model);

}  // namespace tpb
