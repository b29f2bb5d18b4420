// Fuzz target: --workload's spelling (workload/network_spec.h), which a rank also reads back from
// its job and a results file holds in runs[].config.workload. The input is the text. A refusal
// must name --workload (or --hidden). An accepted spec must spell itself canonically and read
// that spelling back to the same spec, cost something finite, and give data sizes within their
// bounds.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "tests/fuzz/fuzz_util.h"
#include "workload/network_spec.h"

namespace {

[[noreturn]] void bug(const char* what, const std::string& text) {
  std::fprintf(stderr, "tpb fuzz: workload '%s': %s\n", text.c_str(), what);
  std::abort();
}

void checkSpec(const tpb::NetworkSpec& s, const std::string& text) {
  const std::string canonical = tpb::workloadText(s);
  const tpb::NetworkSpec back = tpb::parseWorkload("--workload", canonical, "512,512");
  if (tpb::workloadText(back) != canonical) bug("the canonical text does not read back to itself", text);
  const tpb::NetworkCost c = tpb::networkCost(s);
  if (c.parameters == 0 || c.gradientBytes != 4 * c.parameters) bug("no parameters, or gradients not 4 bytes each", text);
  if (!std::isfinite(c.forwardFlops) || !std::isfinite(c.activationBytes) || c.forwardFlops <= 0)
    bug("a cost that is not a positive finite number", text);
  if (tpb::networkCost(back).parameters != c.parameters) bug("the canonical text costs differently", text);
  const std::size_t train = tpb::workloadTrainSize(s), test = tpb::workloadTestSize(s);
  if (train < 64 || train > 60000 || test < tpb::kLeastTestSamples || test > 10000) bug("a data size outside its bounds", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    checkSpec(tpb::parseWorkload("--workload", text, "512,512"), text);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {"--workload", "--hidden"});
  }
  return 0;
}
