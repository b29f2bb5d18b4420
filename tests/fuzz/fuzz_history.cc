// Fuzz target: `tpbench history DIR`: up to six results files (the input split at "\n----\n"),
// written as DIR/00.json ... in commit order, followed point by point with the change-point
// search (few shufflings, pieces of two files, so that short inputs reach it), and the history
// written in each of its formats (text, markdown, json).
#include <filesystem>
#include <string>

#include "common/error.h"
#include "record/history.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = tpb::fuzz::splitParts(data, size, 6);
  const std::filesystem::path dir = tpb::fuzz::scratchDir() / "history";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < parts.size(); ++i)
    (void)tpb::fuzz::writeInput("history/0" + std::to_string(i) + ".json", parts[i]);
  tpb::HistoryOptions opt;
  opt.dir = dir.string();
  opt.changePoints.permutations = 19;
  opt.changePoints.minSize = 2;
  try {
    const tpb::History h = tpb::readHistory(opt);
    for (const char* format : {"text", "markdown", "json"}) (void)tpb::formatHistory(h, opt, format);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {opt.dir});
  }
  return 0;
}
