// Fuzz target: `tpbench model FILE`: collective points read from a results file, the alpha-beta
// fits, the leave-one-out check, crossovers and the projections onto every link preset.
#include <ostream>
#include <streambuf>

#include "common/error.h"
#include "cost_model/model_report.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Swallows the printed report: only what producing it does is under test.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tpb::model::ModelOptions opt;
  opt.files = {tpb::fuzz::writeInput("results.json", {reinterpret_cast<const char*>(data), size})};
  NullBuffer sink;
  std::ostream os(&sink);
  try {
    (void)tpb::model::runModel(opt, os);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), opt.files);
  }
  return 0;
}
