// report/style.h — how a series looks: its display position, colour and origin. A strategy or
// allreduce algorithm keeps one colour and one place in every chart and table.
//
// report/ knows no names. A series' style comes, field by field, from
//   1. the records themselves: every record written since the registry's entry fields exist
//      carries its entry's origin, order and colour (record/records.h, EntryRecord);
//   2. for files older than those fields, this build's registry, which the caller passes in as a
//      StyleLookup (the CLI fills it from core/registry.h; report/ does not depend on core/);
//   3. else a fallback: a spare colour chosen by a stable hash of the name, an order after every
//      known one, and no origin.
#pragma once

#include <climits>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "record/records.h"

namespace tpb::report {

// Which namespace a name lives in: training strategies (runs[].config.strategy) or allreduce
// algorithms (allreduce[].algo). "param_server" is both.
enum class SeriesKind { Strategy, Algorithm };

// Origins as results files spell them (results/README.md).
constexpr const char* kOriginReference = "reference";
constexpr const char* kOriginLibrary = "library";
constexpr const char* kOriginPyTorch = "reference (PyTorch)";

struct SeriesStyle {
  int order = INT_MAX;  // display order, ascending
  std::string color;    // "#rrggbb"
  std::string origin;   // "from scratch", "library", "builtin-equivalent", "reference",
                        // "reference (PyTorch)"; "" unknown
  std::string referenceOf;  // a PyTorch reference: the series rebuilding its algorithm; "" none
};

// The registry's style for a name of `kind`, or nullopt when this build does not know it.
using StyleLookup = std::function<std::optional<SeriesStyle>(SeriesKind kind, const std::string& name)>;

// The style of the entry called `name` among `entries` (each with name, order, color, origin
// and referenceOf members; originText turns an origin into its text): how a caller turns its
// registry into a StyleLookup without report/ knowing the registry's types.
template <typename Entries, typename OriginText>
std::optional<SeriesStyle> styleAmong(const Entries& entries, const std::string& name,
                                      OriginText originText) {
  for (const auto& e : entries) {
    if (e.name == name) return SeriesStyle{e.order, e.color, originText(e.origin), e.referenceOf};
  }
  return std::nullopt;
}

// The styles of the series of one report.
class Styles {
 public:
  explicit Styles(StyleLookup registry = nullptr) : registry_(std::move(registry)) {}

  // Notes what a record says about its series. For each field the first record that has it
  // wins (records of one name from different builds could disagree; input order decides).
  void add(SeriesKind kind, const std::string& name, const EntryRecord& entry);

  // Order, colour (always isHexColor, report/escape.h) and origin: the records', else the registry's, else
  // the fallback (see the top of this file). A PyTorch reference whose colour is close to that of
  // the series it is the reference of gets a contrasting one instead.
  SeriesStyle of(SeriesKind kind, const std::string& name) const;

  int order(SeriesKind kind, const std::string& name) const { return of(kind, name).order; }
  std::string color(SeriesKind kind, const std::string& name) const { return of(kind, name).color; }
  std::string origin(SeriesKind kind, const std::string& name) const { return of(kind, name).origin; }
  // For a PyTorch reference, the series that rebuilds its algorithm ("ddp"); else "".
  std::string referenceOf(SeriesKind kind, const std::string& name) const { return of(kind, name).referenceOf; }

  // Order, then name.
  bool less(SeriesKind kind, const std::string& a, const std::string& b) const;

  // "ddp (builtin)", "ring_all_reduce (from scratch)", "torch_ddp (PyTorch)"; the bare name when
  // the origin is unknown.
  std::string label(SeriesKind kind, const std::string& name) const;

 private:
  SeriesStyle ownStyle(SeriesKind kind, const std::string& name) const;  // of() before the contrast
  StyleLookup registry_;
  std::map<std::pair<SeriesKind, std::string>, EntryRecord> recorded_;
};

// Colour by position (e.g. one per N when several strategies share a chart).
std::string positionColor(std::size_t i);

}  // namespace tpb::report
