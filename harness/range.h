// harness/range.h — the value lists that sweep flags accept (--n_gpus 1..8, --bytes 4K..256M).
//
// Grammar (whitespace around items and tokens is ignored):
//   list  := item ("," item)*
//   item  := value | value ".." value [":" step]
//   step  := "x" N   geometric: start, start*N, start*N^2, ... (N an integer >= 2)
//          | "+" N   arithmetic: start, start+N, start+2N, ... (N >= 1)
// A range stops at the last value <= end (end itself is included only when it is reached).
// Without a step, integer ranges count by +1 and byte ranges double (x2), nccl-tests' habit.
// Values come back in the order written, duplicates removed (the first occurrence stays).
// Every number is plain decimal (common/decimal.h): "010", "04K", "x02" and "+3" are refused.
// LibTorch-free and without process state: the fuzz target tests/fuzz/fuzz_range.cc calls it.
//
// Every error is a tpb::UsageError whose message starts with the flag name and quotes the
// offending text, e.g. "--n_gpus: range '3..1' is empty (start 3 > end 1)".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/format_bytes.h"

namespace tpb {

// Integers: "4", "1..8", "1,2,4,8", "1..3,8", "2..8:x2", "1..9:+2".
// Every value, and both ends of every range, must lie in [minValue, maxValue].
std::vector<long long> parseIntRange(const std::string& flag, const std::string& text,
                                     long long minValue, long long maxValue);

// Byte sizes: an integer with an optional binary suffix, case-insensitive:
// B; K, KB, KiB (x1024); M, MB, MiB (x1024^2); G, GB, GiB (x1024^3). Fractions ("1.5M") are
// rejected. "4K..256M" (doubling), "4K..64M:x4", "1M..4M:+1M" (the step may carry a suffix),
// "1M,16M", "100". Every value, and both ends of every range, must lie in [minValue, maxValue].
std::vector<std::size_t> parseByteRange(const std::string& flag, const std::string& text,
                                        std::size_t minValue, std::size_t maxValue);

// formatBytes (common/format_bytes.h) writes sizes this parser reads back.

}  // namespace tpb
