// Fuzz target: `tpbench compare BASE NEW`: two results files (the input split at "\n----\n";
// without a separator both sides are the same file) compared, and the comparison written in
// each of compare's formats (text, markdown, json).
#include "common/error.h"
#include "record/compare.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = tpb::fuzz::splitParts(data, size, 2);
  tpb::CompareOptions opt;
  opt.basePath = tpb::fuzz::writeInput("base.json", parts.front());
  opt.newPath = parts.size() > 1 ? tpb::fuzz::writeInput("new.json", parts.back()) : opt.basePath;
  try {
    const tpb::CompareResult r = tpb::compareResults(opt);
    for (const char* format : {"text", "markdown", "json"}) (void)tpb::formatComparison(r, opt, format);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {opt.basePath, opt.newPath});
  }
  return 0;
}
