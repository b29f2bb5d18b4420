// workload/idx_file.h — tensors as IDX files (the format MNIST ships in: magic 0 0 <type> <rank>,
// then <rank> big-endian uint32 dimensions, then the elements big-endian, row-major). tpbench
// hands its data, initial weights and sample orders to PyTorch's own training script
// (scripts/torch_ddp.py) this way, and reads the script's final weights back: a format any
// language reads in a few lines, self-describing and checkable (type, shape, exact length).
#pragma once

#include <torch/types.h>

#include <string>

namespace tpb {

// Writes `t` (uint8, int32, float32 or float64; any shape; moved to the CPU and made contiguous
// as needed) to `path`, replacing it. Throws tpb::Error naming the path on a type IDX lacks or
// an I/O error.
void writeIdx(const std::string& path, const torch::Tensor& t);

// Reads an IDX file of those four types into a CPU tensor of its type and shape. Throws
// tpb::Error naming the path when the file is missing, of another type, or not exactly as long
// as its header says.
torch::Tensor readIdx(const std::string& path);

}  // namespace tpb
