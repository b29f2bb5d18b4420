// Fuzz target: the checkpoint checker (workload/checkpoint_check.h) on arbitrary bytes. Every
// input must end in acceptance or a UsageError; anything else (a crash, a sanitizer report,
// another exception) is a finding.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "workload/checkpoint_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tpb::checkCheckpointBytes(data, size, "--resume_from", "fuzz.pt");
  } catch (const tpb::UsageError&) {
  }
  return 0;
}
