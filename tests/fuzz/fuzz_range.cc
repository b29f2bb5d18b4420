// libFuzzer target for the range syntax (harness/range.h): any text, read as every kind of range
// tpbench's flags take. A refusal is a tpb::UsageError whose message names the flag; anything
// else thrown, a crash, a sanitizer finding, or an accepted list that breaks the grammar's
// promises (every value within bounds, no duplicates, at most 2^20 values) is a bug.
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_range.cc \
//     harness/range.cc -o fuzz_range && ./fuzz_range tests/fuzz/corpus/range
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "harness/range.h"

namespace {

[[noreturn]] void bug(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "fuzz_range: %s for input '%s'\n", what.c_str(), text.c_str());
  std::abort();
}

// The message after "[file:line] " starts with the flag.
void checkRefusal(const tpb::UsageError& e, const std::string& flag, const std::string& text) {
  std::string msg = e.what();
  if (msg.rfind('[', 0) == 0 && msg.find("] ") != std::string::npos) msg.erase(0, msg.find("] ") + 2);
  if (msg.rfind(flag + ": ", 0) != 0) bug("a refusal that does not start with " + flag + ": " + msg, text);
}

template <typename T, typename Parse>
void tryRange(const std::string& flag, const std::string& text, T lo, T hi, Parse parse) {
  std::vector<T> values;
  try {
    values = parse(flag, text, lo, hi);
  } catch (const tpb::UsageError& e) {
    checkRefusal(e, flag, text);
    return;
  }
  if (values.empty()) bug("an empty list accepted", text);
  if (values.size() > (std::size_t{1} << 20)) bug("more than 2^20 values", text);
  std::unordered_set<T> seen;
  for (T v : values) {
    if (v < lo || v > hi) bug("a value out of bounds", text);
    if (!seen.insert(v).second) bug("a duplicate value", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tryRange<long long>("--n_gpus", text, 1, 64, tpb::parseIntRange);
  tryRange<long long>("--train_size", text, 0, 1LL << 40, tpb::parseIntRange);
  tryRange<long long>("--any", text, LLONG_MIN, LLONG_MAX, tpb::parseIntRange);
  tryRange<std::size_t>("--bytes", text, 4, std::size_t{1} << 34, tpb::parseByteRange);
  tryRange<std::size_t>("--size", text, 0, SIZE_MAX, tpb::parseByteRange);
  return 0;
}
