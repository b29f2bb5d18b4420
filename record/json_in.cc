#include "record/json_in.h"

#include <cmath>
#include <set>
#include <utility>

#include "common/error.h"

namespace tpb {

using nlohmann::json;

namespace {

// The offending value, short and on one line (dump() escapes control characters; bytes that are
// not UTF-8 are replaced rather than thrown about).
std::string shortText(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

JsonIn::JsonIn(const json& value, std::string file, std::string path)
    : value_(value), file_(std::move(file)), path_(std::move(path)) {}

void JsonIn::fail(const std::string& expected) const {
  TPB_THROW(UsageError, file_ << ": " << (path_.empty() ? "(top level)" : path_) << ": expected " << expected
                              << ", got " << shortText(value_));
}

void JsonIn::object() const {
  if (!value_.is_object()) fail("an object");
}

void JsonIn::array() const {
  if (!value_.is_array()) fail("an array");
}

JsonIn JsonIn::at(const char* key) const {
  object();
  const std::string sub = path_.empty() ? key : path_ + "." + key;
  const auto it = value_.find(key);
  if (it == value_.end()) TPB_THROW(UsageError, file_ << ": " << sub << ": missing (a required field)");
  return JsonIn(*it, file_, sub);
}

std::optional<JsonIn> JsonIn::find(const char* key) const {
  object();
  const auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return std::nullopt;
  return JsonIn(*it, file_, path_.empty() ? key : path_ + "." + key);
}

std::size_t JsonIn::size() const {
  array();
  return value_.size();
}

JsonIn JsonIn::operator[](std::size_t i) const {
  array();
  return JsonIn(value_[i], file_, path_ + "[" + std::to_string(i) + "]");
}

std::string JsonIn::str() const {
  if (!value_.is_string()) fail("a string");
  return value_.get<std::string>();
}

bool JsonIn::boolean() const {
  if (!value_.is_boolean()) fail("true or false");
  return value_.get<bool>();
}

long long JsonIn::integer(long long lo, long long hi) const {
  const std::string want = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  if (value_.is_number_unsigned()) {
    const auto u = value_.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi) || (lo > 0 && u < static_cast<std::uint64_t>(lo))) fail(want);
    return static_cast<long long>(u);
  }
  if (value_.is_number_integer()) {
    const auto v = value_.get<long long>();
    if (v < lo || v > hi) fail(want);
    return v;
  }
  if (value_.is_number_float()) {
    // 4.0 is the integer 4 (values compare by value, not by their text); 4.5 and 1e20 are not.
    const double d = value_.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi))
      fail(want);
    return static_cast<long long>(d);
  }
  fail(want);
}

std::uint64_t JsonIn::unsignedInteger(std::uint64_t hi) const {
  const std::string want = "an integer in 0.." + std::to_string(hi);
  if (value_.is_number_unsigned()) {
    const auto u = value_.get<std::uint64_t>();
    if (u > hi) fail(want);
    return u;
  }
  if (value_.is_number_integer()) {
    const auto v = value_.get<long long>();
    if (v < 0 || static_cast<std::uint64_t>(v) > hi) fail(want);
    return static_cast<std::uint64_t>(v);
  }
  if (value_.is_number_float()) {
    const double d = value_.get<double>();
    // 2^64 is the first double past UINT64_MAX.
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d >= 18446744073709551616.0 ||
        static_cast<std::uint64_t>(d) > hi)
      fail(want);
    return static_cast<std::uint64_t>(d);
  }
  fail(want);
}

namespace {

// "a number in [0, 1]", "a finite number >= 0", "a finite number".
std::string rangeText(double lo, double hi) {
  std::ostringstream want;
  if (hi < kLargestFinite) {
    want << "a number in [" << lo << ", " << hi << "]";
  } else {
    want << "a finite number";
    if (lo > -kLargestFinite) want << " >= " << lo;
  }
  return want.str();
}

}  // namespace

double JsonIn::numberOrNull(NumberRange range) const {
  if (value_.is_null()) return NAN;
  const double d = value_.is_number() ? value_.get<double>() : NAN;
  if (!(d >= range.lo && d <= range.hi)) fail(rangeText(range.lo, range.hi) + " or null");
  return d;
}

double JsonIn::number(double lo, double hi) const {
  const double d = value_.is_number() ? value_.get<double>() : NAN;
  if (!(d >= lo && d <= hi)) fail(rangeText(lo, hi));
  return d;
}

json JsonIn::extraExcept(std::initializer_list<const char*> known) const {
  return extraExcept(std::vector<std::string>(known.begin(), known.end()));
}

json JsonIn::extraExcept(const std::vector<std::string>& known) const {
  object();
  const std::set<std::string> names(known.begin(), known.end());
  json extra = json::object();
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (!names.count(it.key())) extra[it.key()] = it.value();
  }
  return extra;
}

std::optional<std::string> optStr(const JsonIn& obj, const char* key) {
  const auto v = obj.find(key);
  if (!v) return std::nullopt;
  return v->str();
}

double optNumber(const JsonIn& obj, const char* key, NumberRange range) {
  const auto v = obj.find(key);
  return v ? v->number(range.lo, range.hi) : NAN;
}

std::optional<long long> optInteger(const JsonIn& obj, const char* key, long long lo, long long hi) {
  const auto v = obj.find(key);
  if (!v) return std::nullopt;
  return v->integer(lo, hi);
}

}  // namespace tpb
