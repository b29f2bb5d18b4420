// common/decimal.h — the one spelling of numbers tpbench reads from people and launchers (flags,
// range syntax, launcher variables): plain decimal.
//
//   integer  := ["-"] digits         no leading zero ("0" itself is fine), within its type
//   real     := ["-"] mantissa [exponent]
//   mantissa := digits ["." [digits]] | "." digits
//   exponent := ("e" | "E") ["+" | "-"] digits
//
// Nothing else: no '+', no whitespace, no hex ("0x10", "0x1p-3"), no octal ("010" is 8 to
// strtol in base 0), no "inf" or "nan", no value its type cannot hold (strtoull clamps
// "99999999999999999999" to 2^64-1; strtod makes "1e999" inf). LibTorch-free and header-only, so
// that fuzz targets and every reader use the same rule.
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace tpb {

namespace detail {

inline std::size_t decimalDigitsAt(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  while (i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '9') ++n;
  return n;
}

inline std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace detail

// `text` as a plain decimal integer of type T, or nullopt with `why` saying what is wrong, e.g.
// "'010' has a leading zero (plain decimal digits only)" or "'99999999999999999999' is out of
// range (the largest allowed is 18446744073709551615)".
template <typename T>
std::optional<T> parseDecimalInteger(std::string_view text, std::string& why) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer type");
  const bool negative = !text.empty() && text[0] == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || detail::decimalDigitsAt(digits, 0) != digits.size()) {
    why = detail::quoted(text) + " is not a whole number (plain decimal digits only)";
    return std::nullopt;
  }
  if (negative && std::is_unsigned_v<T>) {
    why = "must not be negative, got " + std::string(text);
    return std::nullopt;
  }
  if (digits.size() > 1 && digits[0] == '0') {
    why = detail::quoted(text) + " has a leading zero (plain decimal digits only: 010 is not 8 or 10)";
    return std::nullopt;
  }
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    why = detail::quoted(text) + " is out of range (the " + (negative ? "smallest" : "largest") + " allowed is " +
          std::to_string(negative ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max()) + ")";
    return std::nullopt;
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    why = detail::quoted(text) + " is not a whole number (plain decimal digits only)";
    return std::nullopt;
  }
  return v;
}

// `text` as a plain decimal real (see the grammar above) that a double holds without overflow or
// underflow, or nullopt with `why` saying what is wrong.
inline std::optional<double> parseDecimalReal(std::string_view text, std::string& why) {
  std::size_t i = !text.empty() && text[0] == '-' ? 1 : 0;
  const std::size_t whole = detail::decimalDigitsAt(text, i);
  i += whole;
  std::size_t fraction = 0;
  if (i < text.size() && text[i] == '.') {
    fraction = detail::decimalDigitsAt(text, i + 1);
    i += 1 + fraction;
  }
  bool ok = whole + fraction > 0;
  if (ok && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const std::size_t exponent = detail::decimalDigitsAt(text, i);
    ok = exponent > 0;
    i += exponent;
  }
  if (!ok || i != text.size()) {
    why = detail::quoted(text) + " is not a plain decimal number (digits, an optional fraction and exponent: 0.01, 1e-3)";
    return std::nullopt;
  }
  const std::string copy(text);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  // ERANGE: beyond a double (inf), or so small it lost its digits (0 or a denormal).
  if (errno == ERANGE) {
    why = detail::quoted(text) + " is out of range of a double";
    return std::nullopt;
  }
  return v;
}

}  // namespace tpb
