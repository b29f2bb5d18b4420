// harness/cli/cli_checks.h — the two input checks that need CLI11 itself (the rest are in
// harness/input_checks.h): an unsigned option's text before CLI11 converts it, and a flag given
// an empty value, which CLI11 cannot tell from an absent one once parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/input_checks.h"

namespace tpb::cli {

// For options of unsigned type: plain decimal digits only (CLI11 would turn "-1" into 2^64-1).
inline const CLI::Validator& unsignedNumber() {
  static const CLI::Validator v([](std::string& text) { return unsignedTextProblem(text); }, "UINT", "unsigned");
  return v;
}

// Refuses `flag` when the user gave it as "" (`--out ""`).
inline void checkGivenNotEmpty(const CLI::App* cmd, const std::string& flag, const std::string& value) {
  if (cmd->count(flag) > 0) checkNotEmpty(flag, value);
}

}  // namespace tpb::cli
