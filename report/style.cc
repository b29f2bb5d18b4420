// report/style.cc — see style.h.
#include "report/style.h"

#include <functional>
#include <vector>

namespace tpb::report {

namespace {

struct SeriesStyle {
  const char* name;
  const char* color;
  const char* origin;
};

// In display order.
const std::vector<SeriesStyle>& styles(SeriesKind kind) {
  static const std::vector<SeriesStyle> strategies = {
      {"single", "#7f7f7f", ""},
      {"param_server", "#1f77b4", "from scratch"},
      {"ring_all_reduce", "#2ca02c", "from scratch"},
      {"allreduce", "#9467bd", "library"},
      {"ddp", "#d62728", "builtin"},
      {"data_parallel", "#ff7f0e", "builtin"}};
  static const std::vector<SeriesStyle> algos = {{"ring", "#2ca02c", "from scratch"},
                                                 {"param_server", "#1f77b4", "from scratch"},
                                                 {"library", "#9467bd", "library"}};
  return kind == SeriesKind::Strategy ? strategies : algos;
}

const SeriesStyle* find(SeriesKind kind, const std::string& name) {
  for (const auto& s : styles(kind)) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace

int seriesOrder(SeriesKind kind, const std::string& name) {
  const auto& k = styles(kind);
  const SeriesStyle* s = find(kind, name);
  return static_cast<int>(s ? s - k.data() : static_cast<std::ptrdiff_t>(k.size()));
}

bool seriesLess(SeriesKind kind, const std::string& a, const std::string& b) {
  const int ra = seriesOrder(kind, a), rb = seriesOrder(kind, b);
  return ra != rb ? ra < rb : a < b;
}

std::string seriesColor(SeriesKind kind, const std::string& name) {
  if (const SeriesStyle* s = find(kind, name)) return s->color;
  static const char* const kSpare[] = {"#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79"};
  return kSpare[std::hash<std::string>{}(name) % 5];
}

std::string seriesOrigin(SeriesKind kind, const std::string& name) {
  const SeriesStyle* s = find(kind, name);
  return s ? s->origin : "";
}

std::string labelWithOrigin(SeriesKind kind, const std::string& name) {
  const std::string origin = seriesOrigin(kind, name);
  return origin.empty() ? name : name + " (" + origin + ")";
}

std::string positionColor(std::size_t i) {
  static const char* const c[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                                  "#66a61e", "#e6ab02", "#a6761d", "#666666"};
  return c[i % 8];
}

}  // namespace tpb::report
