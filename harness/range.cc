#include "harness/range.h"

#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "common/decimal.h"
#include "common/error.h"

namespace tpb {
namespace {

// "1..1000000000000" is a typo, not a sweep: refuse it before it eats the memory.
constexpr std::size_t kMaxValues = std::size_t{1} << 20;

const char* const kIntExamples = "e.g. 4, 1..8, 1,2,4,8 or 2..8:x2";
const char* const kByteExamples = "e.g. 4096, 4K, 4K..256M, 1M,16M or 4K..64M:x4";

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// All of `token` as a plain decimal integer (common/decimal.h), or a UsageError naming the flag:
// no leading zero ("010"), no sign but '-', nothing beyond a long long.
long long parseInteger(const std::string& flag, const std::string& token) {
  std::string why;
  if (const std::optional<long long> v = parseDecimalInteger<long long>(token, why)) return *v;
  TPB_THROW(UsageError, flag << ": " << why);
}

struct Suffix {
  const char* name;
  unsigned shift;
};
constexpr Suffix kSuffixes[] = {{"", 0},    {"b", 0},    {"k", 10},  {"kb", 10}, {"kib", 10},
                                {"m", 20},  {"mb", 20},  {"mib", 20}, {"g", 30}, {"gb", 30},
                                {"gib", 30}};

unsigned suffixShift(const std::string& flag, const std::string& token, const std::string& sfx) {
  const std::string l = lower(sfx);
  for (const Suffix& s : kSuffixes) {
    if (l == s.name) return s.shift;
  }
  TPB_THROW(UsageError, flag << ": unknown size suffix '" << sfx << "' in '" << token
                             << "' (use B, K, M or G, optionally KB/KiB etc.; K = 1024)");
}

// "4096", "4K", "256MiB". Fractions get a message that says what to write instead.
std::size_t parseSize(const std::string& flag, const std::string& token) {
  std::size_t i = 0;
  while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
  if (i == 0) {
    TPB_THROW(UsageError, flag << ": '" << token << "' is not a size (" << kByteExamples << ")");
  }
  const std::string digits = token.substr(0, i);
  if (i < token.size() && token[i] == '.') {
    std::size_t j = i + 1;
    while (j < token.size() && std::isdigit(static_cast<unsigned char>(token[j]))) ++j;
    const std::string frac = token.substr(i + 1, j - i - 1);
    std::ostringstream hint;
    // Suggest the exact whole-byte spelling when there is one: 1.5M -> 1536K.
    unsigned long long whole = 0, fracValue = 0, scale = 1, num = 0;
    bool exact = !frac.empty() && frac.size() <= 9 &&
                 std::from_chars(digits.data(), digits.data() + digits.size(), whole).ec ==
                     std::errc() &&
                 std::from_chars(frac.data(), frac.data() + frac.size(), fracValue).ec ==
                     std::errc();
    for (std::size_t k = 0; exact && k < frac.size(); ++k) scale *= 10;
    if (exact) {
      const std::string sfx = token.substr(j);
      unsigned shift = 0;
      const std::string l = lower(sfx);
      exact = false;
      for (const Suffix& s : kSuffixes) {
        if (l == s.name) {
          shift = s.shift;
          exact = true;
        }
      }
      exact = exact && !__builtin_mul_overflow(whole, scale, &num) &&
              !__builtin_add_overflow(num, fracValue, &num) &&
              !__builtin_mul_overflow(num, 1ULL << shift, &num) && num % scale == 0 &&
              num / scale <= std::numeric_limits<std::size_t>::max();
    }
    if (exact) {
      hint << "write " << formatBytes(static_cast<std::size_t>(num / scale));
    } else {
      hint << "use a smaller unit";
    }
    TPB_THROW(UsageError, flag << ": '" << token
                               << "' is not a whole number; sizes take no fractions (" << hint.str()
                               << ")");
  }
  const unsigned shift = suffixShift(flag, token, token.substr(i));
  std::string why;
  const std::optional<unsigned long long> n = parseDecimalInteger<unsigned long long>(digits, why);
  if (!n) TPB_THROW(UsageError, flag << ": '" << token << "': " << why);
  unsigned long long bytes = 0;
  if (__builtin_mul_overflow(*n, 1ULL << shift, &bytes) ||
      bytes > std::numeric_limits<std::size_t>::max()) {
    TPB_THROW(UsageError, flag << ": '" << token << "' is too large");
  }
  return static_cast<std::size_t>(bytes);
}

// What differs between integer and byte ranges.
template <typename T>
struct Grammar {
  std::function<T(const std::string& token)> parseValue;
  std::function<T(const std::string& token)> parseAddStep;  // after '+'
  std::function<std::string(T)> show;
  bool defaultMultiply;  // no step given: x2 (true) or +1 (false)
  const char* examples;
};

template <typename T>
void checkBounds(const std::string& flag, const Grammar<T>& g, const std::string& token, T v,
                 T minValue, T maxValue) {
  if (v < minValue) {
    TPB_THROW(UsageError, flag << ": " << token << " is below the minimum " << g.show(minValue));
  }
  if (v > maxValue) {
    TPB_THROW(UsageError, flag << ": " << token << " is above the maximum " << g.show(maxValue));
  }
}

template <typename T>
void expandItem(const std::string& flag, const Grammar<T>& g, const std::string& item, T minValue,
                T maxValue, std::vector<T>& out) {
  const std::size_t colon = item.find(':');
  const std::string body = trim(item.substr(0, colon));
  const std::size_t dots = body.find("..");

  if (dots == std::string::npos) {
    if (colon != std::string::npos) {
      TPB_THROW(UsageError, flag << ": '" << item
                                 << "' has a step but no range (write start..end:step)");
    }
    // "1-4" for a range: say how one is written before the number's own complaint.
    const std::size_t dash = body.find('-');
    if (dash != std::string::npos && dash > 0 && dash + 1 < body.size())
      TPB_THROW(UsageError, flag << ": '" << item << "' is not a value; a range is written with two dots: "
                                 << body.substr(0, dash) << ".." << body.substr(dash + 1));
    const T v = g.parseValue(body);
    checkBounds(flag, g, body, v, minValue, maxValue);
    out.push_back(v);
    return;
  }

  const std::string startText = trim(body.substr(0, dots));
  const std::string endText = trim(body.substr(dots + 2));
  if (startText.empty() || endText.empty()) {
    TPB_THROW(UsageError, flag << ": range '" << item << "' needs a start and an end ("
                               << g.examples << ")");
  }
  if (endText.find("..") != std::string::npos) {
    TPB_THROW(UsageError, flag << ": '" << item << "' is not a range (more than one '..')");
  }
  const T start = g.parseValue(startText);
  const T end = g.parseValue(endText);
  if (start > end) {
    TPB_THROW(UsageError, flag << ": range '" << item << "' is empty (start " << g.show(start)
                               << " > end " << g.show(end) << ")");
  }
  checkBounds(flag, g, startText, start, minValue, maxValue);
  checkBounds(flag, g, endText, end, minValue, maxValue);

  bool multiply = g.defaultMultiply;
  T amount = multiply ? T{2} : T{1};
  if (colon != std::string::npos) {
    const std::string step = trim(item.substr(colon + 1));
    const std::string rest = step.empty() ? std::string() : trim(step.substr(1));
    if (step.empty()) {
      TPB_THROW(UsageError, flag << ": '" << item << "' has ':' but no step (use :xN or :+N)");
    } else if (step[0] == 'x' || step[0] == 'X') {
      multiply = true;
      std::string why;
      const auto factor = parseDecimalInteger<unsigned long long>(rest, why);
      if (!factor || *factor < 2 || *factor > static_cast<unsigned long long>(std::numeric_limits<T>::max())) {
        TPB_THROW(UsageError, flag << ": step '" << step << "' in '" << item
                                   << "' is invalid: a geometric factor must be an integer >= 2");
      }
      amount = static_cast<T>(*factor);
    } else if (step[0] == '+') {
      multiply = false;
      amount = g.parseAddStep(rest);
      if (amount < T{1}) {
        TPB_THROW(UsageError, flag << ": step '" << step << "' in '" << item
                                   << "' is invalid: an arithmetic step must be >= 1");
      }
    } else {
      TPB_THROW(UsageError, flag << ": step '" << step << "' in '" << item
                                 << "' is not understood (use xN to multiply or +N to add)");
    }
  }
  if (multiply && start <= T{0}) {
    TPB_THROW(UsageError, flag << ": range '" << item << "' multiplies from " << g.show(start)
                               << " and would never grow (start above 0, or list "
                               << g.show(start) << " separately)");
  }

  for (T cur = start;;) {
    if (out.size() >= kMaxValues) {
      TPB_THROW(UsageError, flag << ": '" << item << "' expands to more than " << kMaxValues
                                 << " values");
    }
    out.push_back(cur);
    T next{};
    const bool overflow = multiply ? __builtin_mul_overflow(cur, amount, &next)
                                   : __builtin_add_overflow(cur, amount, &next);
    if (overflow || next > end) break;
    cur = next;
  }
}

template <typename T>
std::vector<T> parseList(const std::string& flag, const Grammar<T>& g, const std::string& text,
                         T minValue, T maxValue) {
  if (minValue > maxValue) {
    TPB_THROW(Error, flag << ": empty bounds [" << g.show(minValue) << ", " << g.show(maxValue)
                          << "]");
  }
  if (trim(text).empty()) {
    TPB_THROW(UsageError, flag << ": no value given (" << g.examples << ")");
  }
  std::vector<T> all;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string item =
        trim(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (item.empty()) {
      TPB_THROW(UsageError, flag << ": empty item in list '" << text << "'");
    }
    expandItem(flag, g, item, minValue, maxValue, all);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  std::vector<T> result;
  std::unordered_set<T> seen;
  for (T v : all) {
    if (seen.insert(v).second) result.push_back(v);
  }
  return result;
}

}  // namespace

std::vector<long long> parseIntRange(const std::string& flag, const std::string& text,
                                     long long minValue, long long maxValue) {
  Grammar<long long> g;
  g.parseValue = [&](const std::string& t) { return parseInteger(flag, t); };
  g.parseAddStep = g.parseValue;
  g.show = [](long long v) { return std::to_string(v); };
  g.defaultMultiply = false;
  g.examples = kIntExamples;
  return parseList(flag, g, text, minValue, maxValue);
}

std::vector<std::size_t> parseByteRange(const std::string& flag, const std::string& text,
                                        std::size_t minValue, std::size_t maxValue) {
  Grammar<std::size_t> g;
  g.parseValue = [&](const std::string& t) { return parseSize(flag, t); };
  g.parseAddStep = g.parseValue;
  g.show = [](std::size_t v) { return formatBytes(v); };
  g.defaultMultiply = true;
  g.examples = kByteExamples;
  return parseList(flag, g, text, minValue, maxValue);
}

}  // namespace tpb
