// harness/cli/cli_checks.h — the input checks that need CLI11 itself (the rest are in
// harness/input_checks.h): an integer option's text before CLI11 converts it, and a flag given
// an empty value, which CLI11 cannot tell from an absent one once parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/input_checks.h"

namespace tpb::cli {

// For options of unsigned type: plain decimal digits only (CLI11 would turn "-1" into 2^64-1).
// checkIntegerOptions gives it to every such option; no command adds it by hand.
inline const CLI::Validator& unsignedNumber() {
  static const CLI::Validator v([](std::string& text) { return unsignedTextProblem(text); }, "", "unsigned");
  return v;
}

// For options of signed integer type: an optional '-' and plain decimal digits.
inline const CLI::Validator& integerNumber() {
  static const CLI::Validator v([](std::string& text) { return integerTextProblem(text); }, "", "integer");
  return v;
}

// Gives every integer option of `app` and its subcommands the check of its kind, so that no flag,
// present or future, reads "010" as octal, "0x10" as hex or "-1" as 2^64-1. CLI11 names an
// option's type "INT" or "UINT" (then ":<validator>" for each check it already has).
inline void checkIntegerOptions(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type == "INT") opt->check(integerNumber());
    if (type == "UINT") opt->check(unsignedNumber());
  }
  for (CLI::App* sub : app.get_subcommands({})) checkIntegerOptions(*sub);
}

// Refuses `flag` when the user gave it as "" (`--out ""`).
inline void checkGivenNotEmpty(const CLI::App* cmd, const std::string& flag, const std::string& value) {
  if (cmd->count(flag) > 0) checkNotEmpty(flag, value);
}

}  // namespace tpb::cli
