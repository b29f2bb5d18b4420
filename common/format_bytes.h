// common/format_bytes.h — the short byte-size text that tables and labels share (harness range
// parsing reads it back; record/compare labels points with it).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace tpb {

// Short form for tables: the largest of G, M, K that divides the value exactly, else bytes:
// 0 -> "0", 4 -> "4", 1024 -> "1K", 1536 -> "1536", 64 MiB -> "64M", 1 GiB -> "1G".
// parseByteRange(formatBytes(x)) == {x} for every x (harness/range.h).
inline std::string formatBytes(std::size_t bytes) {
  if (bytes == 0) return "0";
  static const struct {
    unsigned shift;
    char unit;
  } kUnits[] = {{30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (const auto& u : kUnits) {
    const std::size_t scale = std::size_t{1} << u.shift;
    if (bytes % scale == 0) return std::to_string(bytes / scale) + u.unit;
  }
  return std::to_string(bytes);
}

// About `bytes`, for a size computed rather than chosen (where two fitted lines cross): 3
// significant digits in the largest of G, M, K it reaches: 700 -> "700", 1132 -> "1.11K",
// 100000 -> "97.7K", 1000 -> "1000", 64 MiB -> "64M".
inline std::string formatBytesApprox(double bytes) {
  static const struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1024.0 * 1024 * 1024, "G"}, {1024.0 * 1024, "M"}, {1024.0, "K"}, {1.0, ""}};
  char b[48];
  for (const auto& u : kUnits) {
    if (bytes < u.scale && u.scale > 1) continue;
    const double v = bytes / u.scale;  // below 1024: "%.3g" would write 1000 as "1e+03"
    std::snprintf(b, sizeof b, v < 1000 ? "%.3g%s" : "%.0f%s", v, u.unit);
    return b;
  }
  return "0";
}

}  // namespace tpb
