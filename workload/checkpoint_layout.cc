#include "workload/checkpoint_layout.h"

#include <limits>

namespace tpb {

namespace {

constexpr const char* kFormatStem = "tpbench.checkpoint/";

// A name from a file, cut so that the refusal stays one readable line (main escapes what it prints).
std::string shortName(const std::string& name) {
  constexpr std::size_t kMost = 120;
  return name.size() <= kMost ? name : name.substr(0, kMost) + "...";
}

}  // namespace

int checkpointVersion(const std::string& format) {
  const std::string stem = kFormatStem;
  if (format.compare(0, stem.size(), stem) != 0 || format.size() == stem.size() || format.size() > stem.size() + 6)
    return -1;
  int version = 0;
  for (std::size_t i = stem.size(); i < format.size(); ++i) {
    if (format[i] < '0' || format[i] > '9') return -1;
    version = version * 10 + (format[i] - '0');
  }
  return version;
}

std::string formatProblem(const std::string& format) {
  const int version = checkpointVersion(format);
  if (version > kCheckpointVersion)
    return "written by a newer tpbench (" + shortName(format) + "; this one reads up to /" +
           std::to_string(kCheckpointVersion) + ")";
  if (version < 1) return std::string("not a tpbench checkpoint ('format' is not ") + kFormatStem + "<version>)";
  return "";
}

std::string sizesText(const std::vector<std::int64_t>& sizes) {
  if (sizes.empty()) return "a scalar";
  constexpr std::size_t kMost = 16;  // a file may claim any number of dimensions
  std::string text;
  for (std::size_t i = 0; i < sizes.size() && i < kMost; ++i) text += (i ? "x" : "") + std::to_string(sizes[i]);
  return sizes.size() <= kMost ? text : text + "x... (" + std::to_string(sizes.size()) + " dimensions)";
}

std::int64_t elementCount(const std::vector<std::int64_t>& sizes) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) {
    if (s < 0 || (s > 0 && n > std::numeric_limits<std::int64_t>::max() / s)) return -1;
    n *= s;
  }
  return n;
}

std::string layoutDifference(const ModelLayout& file, const ModelLayout& run, const std::string& model) {
  for (std::size_t i = 0; i < file.size() && i < run.size(); ++i) {
    if (file[i].name != run[i].name)
      return "its tensor " + std::to_string(i) + " is '" + shortName(file[i].name) + "', " + model + " has '" +
             run[i].name + "' there";
    if (file[i].sizes != run[i].sizes)
      return "its '" + run[i].name + "' is " + sizesText(file[i].sizes) + ", " + model + " has " +
             sizesText(run[i].sizes);
  }
  if (file.size() != run.size())
    return "it holds " + std::to_string(file.size()) + " tensors, " + model + " has " + std::to_string(run.size());
  return "";
}

}  // namespace tpb
