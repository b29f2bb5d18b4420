// common/format_bytes.h — the short byte-size text that tables and labels share (harness range
// parsing reads it back; record/compare labels points with it).
#pragma once

#include <cstddef>
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

}  // namespace tpb
