// harness/cli/cli_checks.h — the input checks that need CLI11 itself (the rest are in
// harness/input_checks.h): a numeric option's text before CLI11 converts it, and a flag given
// an empty value, which CLI11 cannot tell from an absent one once parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/input_checks.h"

namespace tpb::cli {

// For options of unsigned type: plain decimal digits only (CLI11 would turn "-1" into 2^64-1).
// checkNumberOptions gives it to every such option; no command adds it by hand.
inline const CLI::Validator& unsignedNumber() {
  static const CLI::Validator v([](std::string& text) { return unsignedTextProblem(text); }, "", "unsigned");
  return v;
}

// For options of signed integer type: an optional '-' and plain decimal digits.
inline const CLI::Validator& integerNumber() {
  static const CLI::Validator v([](std::string& text) { return integerTextProblem(text); }, "", "integer");
  return v;
}

// For options of floating-point type: plain decimal reals (CLI11 would take "0x1p-3", "inf", "+1").
inline const CLI::Validator& realNumber() {
  static const CLI::Validator v([](std::string& text) { return realTextProblem(text); }, "", "real");
  return v;
}

// Gives every numeric option of `app` and its subcommands the check of its kind, so that no flag,
// present or future, reads "010" as octal, "0x10" as hex, "-1" as 2^64-1, clamps an overflow, or
// takes a hex float. CLI11 names an option's type "INT", "UINT" or "FLOAT" (then ":<validator>"
// for each check it already has). An integer that fits 64 bits but not its option's narrower
// type is refused by CLI11's own conversion (parseErrorText words that message).
inline void checkNumberOptions(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type == "INT") opt->check(integerNumber());
    if (type == "UINT") opt->check(unsignedNumber());
    if (type == "FLOAT") opt->check(realNumber());
  }
  for (CLI::App* sub : app.get_subcommands({})) checkNumberOptions(*sub);
}

// CLI11's "Could not convert: --epochs = 99999999999", which after checkNumberOptions means a
// plain decimal number beyond the option's type, as "--epochs: '99999999999' is out of range";
// any other parse error as CLI11 words it.
inline std::string parseErrorText(const CLI::ParseError& e) {
  const std::string text = e.what(), prefix = "Could not convert: ";
  const std::size_t eq = text.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr || text.rfind(prefix, 0) != 0 || eq == std::string::npos)
    return text;
  const std::string flag = text.substr(prefix.size(), eq - prefix.size()), value = text.substr(eq + 3);
  return flag + ": '" + value + "' is out of range for this flag";
}

// --bind, which every command that launches ranks takes alike (checked by checkBindFlag).
inline void addBindFlag(CLI::App* cmd, std::string& bind) {
  cmd->add_option("--bind", bind,
                  "none (every rank may run on every core this command may) or core (local rank r on the r-th of "
                  "them, ranks beyond the cores sharing them in turn, as mpirun's --bind-to core; mpirun is "
                  "given the same); not under torchrun, srun or mpirun, which place the ranks")
      ->capture_default_str();
}

// Refuses `flag` when the user gave it as "" (`--out ""`).
inline void checkGivenNotEmpty(const CLI::App* cmd, const std::string& flag, const std::string& value) {
  if (cmd->count(flag) > 0) checkNotEmpty(flag, value);
}

}  // namespace tpb::cli
