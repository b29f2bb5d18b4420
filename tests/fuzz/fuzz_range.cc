// Fuzz target: the range syntax of the sweep flags (harness/range.h), with the bounds the
// command line gives them: the input's first byte picks the flag, the rest is its text. Every
// value returned must lie within the bounds and appear once; a refusal must name the flag.
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
  const bool inBounds = values.empty() || (*distinct.begin() >= lo && *distinct.rbegin() <= hi);
  if (distinct.size() != values.size() || !inBounds) {
    std::fprintf(stderr, "tpb fuzz: range '%s' gave a value twice or out of bounds\n", text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  struct IntFlag { const char* name; long long lo, hi; };
  // harness/cli/bench_flags.cc and sweep_cmd.cc
  static const IntFlag kInts[] = {{"--n_gpus", 1, 64}, {"--batch_size", 1, 1 << 20}, {"--train_size", 0, 1LL << 40}};
  const unsigned pick = data[0] % 4;
  const std::string flag = pick < 3 ? kInts[pick].name : "--bytes";
  try {
    if (pick < 3)
      check(tpb::parseIntRange(flag, text, kInts[pick].lo, kInts[pick].hi), kInts[pick].lo, kInts[pick].hi, text);
    else
      check(tpb::parseByteRange(flag, text, 4, std::size_t(1) << 34), std::size_t(4), std::size_t(1) << 34, text);
  } catch (const tpb::UsageError& e) {
    tpb::fuzz::checkRefusal(e.what(), {flag});
  }
  return 0;
}
