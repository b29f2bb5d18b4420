// Fuzz target: the range syntax of the sweep flags (harness/range.h), with the bounds the
// command line gives them and the widest bounds the types allow: the input's first byte picks
// the flag, the rest is its text. An accepted list must be non-empty, of at most 2^20 values,
// each within the bounds and each once; a refusal must name the flag.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/error.h"
#include "harness/range.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

template <typename T>
void check(const std::vector<T>& values, T lo, T hi, const std::string& text) {
  const std::set<T> distinct(values.begin(), values.end());
  const char* bug = values.empty()                       ? "an empty list accepted"
                    : values.size() > (std::size_t{1} << 20) ? "more than 2^20 values"
                    : distinct.size() != values.size()    ? "a value twice"
                    : (*distinct.begin() < lo || *distinct.rbegin() > hi) ? "a value out of bounds"
                                                                          : nullptr;
  if (bug) {
    std::fprintf(stderr, "tpb fuzz: range '%s': %s\n", text.c_str(), bug);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  struct IntFlag { const char* name; long long lo, hi; };
  // harness/cli/bench_flags.cc and sweep_cmd.cc, and a flag as wide as the type
  static const IntFlag kInts[] = {{"--n_gpus", 1, 64},
                                  {"--batch_size", 1, 1 << 20},
                                  {"--train_size", 0, 1LL << 40},
                                  {"--any", LLONG_MIN, LLONG_MAX}};
  struct SizeFlag { const char* name; std::size_t lo, hi; };
  static const SizeFlag kSizes[] = {{"--bytes", 4, std::size_t{1} << 34}, {"--size", 0, SIZE_MAX}};
  const unsigned pick = data[0] % 6;
  const std::string flag = pick < 4 ? kInts[pick].name : kSizes[pick - 4].name;
  try {
    if (pick < 4) {
      const IntFlag& f = kInts[pick];
      check(tpb::parseIntRange(flag, text, f.lo, f.hi), f.lo, f.hi, text);
    } else {
      const SizeFlag& f = kSizes[pick - 4];
      check(tpb::parseByteRange(flag, text, f.lo, f.hi), f.lo, f.hi, text);
    }
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {flag});
  }
  return 0;
}
