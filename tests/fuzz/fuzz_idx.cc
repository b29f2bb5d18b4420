// Fuzz target: the MNIST IDX reader (workload/idx.h) on arbitrary bytes, plain or gzipped; the
// first byte picks images or labels. Every input must end in a decoded file or a UsageError.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "workload/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const tpb::IdxKind kind = data[0] & 1 ? tpb::IdxKind::Labels : tpb::IdxKind::Images;
  try {
    tpb::decodeMnistIdx(data + 1, size - 1, kind, "fuzz-idx");
  } catch (const tpb::UsageError&) {
  }
  return 0;
}
