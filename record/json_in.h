// record/json_in.h — reading one value of an untrusted results document with its place in it.
//
// Every read names the file and the field path ("results/x.json: runs[3].config.n_gpus: expected
// an integer in 1..65536, got 1e+20") in a one-line tpb::UsageError; nothing here lets a raw
// nlohmann exception through. Absent and null are told apart from a wrong type only where the
// caller asks for an optional value (results/README.md says where that is allowed).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpb {

// The ranges results/README.md gives measured numbers: times, rates, sizes and counts are
// finite and >= 0; accuracies and other fractions lie in [0, 1].
struct NumberRange {
  double lo, hi;
};
inline constexpr double kLargestFinite = 1.7976931348623157e308;
inline constexpr NumberRange kNonNegativeNumber{0, kLargestFinite};
inline constexpr NumberRange kFraction{0, 1};

class JsonIn {
 public:
  // `file` names the document in errors; `path` is this value's place in it ("" for the top).
  JsonIn(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  bool isNull() const { return value_.is_null(); }

  // A member of an object: required (absent, or null when !nullOk, throws) or optional (absent
  // or null gives nullopt). Throws when this value is not an object.
  JsonIn at(const char* key) const;
  std::optional<JsonIn> find(const char* key) const;
  // Element i of an array (the caller iterates 0..size()-1 after checking array()).
  JsonIn operator[](std::size_t i) const;
  std::size_t size() const;  // of an array; throws when this is not an array

  std::string str() const;
  bool boolean() const;
  // An integral number (1 and 1.0 alike) in [lo, hi].
  long long integer(long long lo, long long hi) const;
  std::uint64_t unsignedInteger(std::uint64_t hi = UINT64_MAX) const;
  // null (NaN: non-finite numbers are written as null), or a finite number in the range
  // results/README.md gives the field.
  double numberOrNull(NumberRange range) const;
  // A finite number in [lo, hi].
  double number(double lo, double hi) const;

  void object() const;  // throws unless an object
  void array() const;   // throws unless an array

  // The members of this object whose names are not in `known`: what a newer or other writer
  // added, kept so that a load + save round trip does not drop it.
  nlohmann::json extraExcept(std::initializer_list<const char*> known) const;
  nlohmann::json extraExcept(const std::vector<std::string>& known) const;

  // Throws "file: path: expected <what>, got <value>".
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  const nlohmann::json& value_;
  std::string file_, path_;
};

// Optional helpers: nullopt when the member is absent or null.
std::optional<std::string> optStr(const JsonIn& obj, const char* key);
// NaN when absent or null, else a finite number in `range`.
double optNumber(const JsonIn& obj, const char* key, NumberRange range);
std::optional<long long> optInteger(const JsonIn& obj, const char* key, long long lo, long long hi);

}  // namespace tpb
