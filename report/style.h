// report/style.h — how a series looks: its display position, colour and origin. A strategy or
// allreduce algorithm keeps one colour and one place in every chart and table. This is the one
// place in report/ that knows names; today from a built-in table, later from the registry's
// metadata (order, colour, origin), with this API unchanged.
#pragma once

#include <cstddef>
#include <string>

namespace tpb::report {

// Which namespace a name lives in: training strategies (runs[].config.strategy) or allreduce
// algorithms (allreduce[].algo). "param_server" is both.
enum class SeriesKind { Strategy, Allreduce };

// Display position: known names in their fixed order, every other name after them.
int seriesOrder(SeriesKind kind, const std::string& name);

// Order by seriesOrder, then by name.
bool seriesLess(SeriesKind kind, const std::string& a, const std::string& b);

// "#rrggbb"; a name without one of its own gets one of a few spare colours, by its hash.
std::string seriesColor(SeriesKind kind, const std::string& name);

// Where the implementation comes from: "from scratch", "builtin" (a LibTorch-equivalent),
// "library", or "" when not known.
std::string seriesOrigin(SeriesKind kind, const std::string& name);

// "ddp (builtin)", or the bare name when its origin is not known.
std::string labelWithOrigin(SeriesKind kind, const std::string& name);

// Colour by position (e.g. one per N when several strategies share a chart).
std::string positionColor(std::size_t i);

}  // namespace tpb::report
