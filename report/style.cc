// report/style.cc — see style.h.
#include "report/style.h"

#include <cmath>
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

int channel(const std::string& hex, int i) { return std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16); }

// Euclidean distance in RGB (0 .. 441): crude, but enough to tell two reds apart from a red and
// a cyan.
double colorDistance(const std::string& a, const std::string& b) {
  double d = 0;
  for (int i = 0; i < 3; ++i) d += std::pow(channel(a, i) - channel(b, i), 2);
  return std::sqrt(d);
}

// Below this, two lines in one chart read as the same series.
constexpr double kTooClose = 100;

// Of the colours no registry entry uses, the one farthest from `base`.
std::string contrastingColor(const std::string& base) {
  static const char* const kCandidates[] = {"#17becf", "#393b79", "#bcbd22"};
  std::string best = kCandidates[0];
  for (const char* c : kCandidates) {
    if (colorDistance(c, base) > colorDistance(best, base)) best = c;
  }
  return best;
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
  SeriesStyle s = ownStyle(kind, name);
  // A reference is drawn beside the strategy it is the reference of: never in its colour, even
  // where a file recorded two near-identical ones.
  if (!s.referenceOf.empty() && s.referenceOf != name) {
    const std::string base = ownStyle(kind, s.referenceOf).color;
    if (colorDistance(s.color, base) < kTooClose) s.color = contrastingColor(base);
  }
  return s;
}

SeriesStyle Styles::ownStyle(SeriesKind kind, const std::string& name) const {
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
  if (origin.empty() || origin == name) return name;  // "nccl-tests", not "nccl-tests (nccl-tests)"
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
