// report/style.cc — see style.h.
#include "report/style.h"

#include <cstdint>

#include "report/escape.h"

namespace tpb::report {

namespace {

// FNV-1a: the same spare colour for a name on every platform and in every build.
std::uint32_t stableHash(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string spareColor(const std::string& name) {
  static const char* const kSpare[] = {"#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79"};
  return kSpare[stableHash(name) % 5];
}

}  // namespace

void Styles::add(SeriesKind kind, const std::string& name, const EntryRecord& entry) {
  EntryRecord& e = recorded_[{kind, name}];
  if (!e.order) e.order = entry.order;
  if (!e.color) e.color = entry.color;
  if (!e.origin) e.origin = entry.origin;
  if (!e.referenceOf) e.referenceOf = entry.referenceOf;
}

SeriesStyle Styles::of(SeriesKind kind, const std::string& name) const {
  SeriesStyle s;
  if (const auto reg = registry_ ? registry_(kind, name) : std::nullopt) {
    s = *reg;
    if (!isHexColor(s.color)) s.color.clear();
  }
  const auto it = recorded_.find({kind, name});
  if (it != recorded_.end()) {
    const EntryRecord& e = it->second;
    if (e.order) s.order = *e.order;
    if (e.color && isHexColor(*e.color)) s.color = *e.color;
    if (e.origin) s.origin = *e.origin;
    if (e.referenceOf) s.referenceOf = *e.referenceOf;
  }
  if (s.color.empty()) s.color = spareColor(name);
  return s;
}

bool Styles::less(SeriesKind kind, const std::string& a, const std::string& b) const {
  const int ra = order(kind, a), rb = order(kind, b);
  return ra != rb ? ra < rb : a < b;
}

std::string Styles::label(SeriesKind kind, const std::string& name) const {
  const std::string origin = this->origin(kind, name);
  if (origin.empty()) return name;
  // The seed's word for a framework's algorithm rebuilt here; PyTorch's own for its references.
  const std::string word = origin == "builtin-equivalent" ? "builtin" : origin == kOriginPyTorch ? "PyTorch" : origin;
  return name + " (" + word + ")";
}

std::string positionColor(std::size_t i) {
  static const char* const c[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                                  "#66a61e", "#e6ab02", "#a6761d", "#666666"};
  return c[i % 8];
}

}  // namespace tpb::report
