// Fuzz target: the checkpoint checker (workload/checkpoint_check.h) on arbitrary bytes, and what
// a file's "format" and "shapes" claim compared with a run's model (workload/checkpoint_layout.h).
// Every input must end in acceptance or a UsageError; anything else (a crash, a sanitizer report,
// another exception, a comparison that calls different layouts the same or a count that
// overflows unnoticed) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "workload/checkpoint_check.h"
#include "workload/checkpoint_layout.h"

namespace {

// The same bytes read as what a file claims: the first line its format, each further line one
// tensor, its name up to a tab, then its sizes, 8 bytes each (the lowest first).
tpb::ModelLayout claimedLayout(const std::string& text, std::string& format) {
  tpb::ModelLayout layout;
  std::size_t at = text.find('\n');
  format = text.substr(0, at);
  while (at != std::string::npos && layout.size() < 64) {
    const std::size_t next = text.find('\n', at + 1);
    const std::string line = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const std::size_t tab = line.find('\t');
    tpb::TensorLayout t{line.substr(0, tab), {}};
    for (std::size_t i = tab == std::string::npos ? line.size() : tab + 1; i + 8 <= line.size(); i += 8) {
      std::uint64_t v = 0;
      for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(line[i + b]);
      t.sizes.push_back(static_cast<std::int64_t>(v));
    }
    layout.push_back(std::move(t));
    at = next;
  }
  return layout;
}

// elementCount against 128-bit arithmetic: -1 exactly when a size is negative or the product leaves int64.
void checkCount(const std::vector<std::int64_t>& sizes) {
  __int128 n = 1;
  bool fits = true;
  for (std::int64_t s : sizes) {
    if (s < 0) fits = false;
    if (fits) n *= s;
    if (n > INT64_MAX) fits = false;
  }
  const std::int64_t got = tpb::elementCount(sizes);
  if (fits ? got != static_cast<std::int64_t>(n) : got != -1) std::abort();
}

void checkClaims(const std::uint8_t* data, std::size_t size) {
  std::string format;
  const tpb::ModelLayout file = claimedLayout(std::string(reinterpret_cast<const char*>(data), size), format);
  const int version = tpb::checkpointVersion(format);
  if (version < -1 || tpb::formatProblem(format).empty() != (version >= 1 && version <= tpb::kCheckpointVersion))
    std::abort();
  const tpb::ModelLayout run = {{"block0.conv.weight", {16, 1, 3, 3}}, {"block0.bn.weight", {16}},
                                {"block0.bn.num_batches_tracked", {}}};
  if (!tpb::layoutDifference(file, file, "this run's model").empty()) std::abort();
  const bool same = file.size() == run.size() &&
                    [&] {
                      for (std::size_t i = 0; i < run.size(); ++i)
                        if (file[i].name != run[i].name || file[i].sizes != run[i].sizes) return false;
                      return true;
                    }();
  const std::string why = tpb::layoutDifference(file, run, "this run's model");
  // One line of bounded length, whatever the file names: its names and sizes are cut.
  if (why.empty() != same || why.find('\n') != std::string::npos || why.size() > 1000) std::abort();
  for (const tpb::TensorLayout& t : file) checkCount(t.sizes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tpb::checkCheckpointBytes(data, size, "--resume_from", "fuzz.pt");
  } catch (const tpb::UsageError&) {
  }
  checkClaims(data, size);
  return 0;
}
