// harness/cli/cli_checks.h — the input checks that need CLI11 itself (the rest are in
// harness/input_checks.h): a numeric option's text before CLI11 converts it, and a flag given
// an empty value, which CLI11 cannot tell from an absent one once parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "common/text_escape.h"
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

// Edits (insertions, deletions, substitutions) that turn a into b.
inline std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The flags of args (argv without the program) that `cmd` does not take, each with the nearest
// it does take where one is near ("--n_gpu" -> "--n_gpus", `sweep --strategy` -> "--strategies":
// at most 1 + a quarter of the name's length in edits): "unknown flag --n_gpu for run (did you
// mean --n_gpus?)". Empty where every flag is known (the error is then of another kind).
inline std::string unknownFlagsText(const CLI::App& cmd, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options())
    for (const std::string& l : o->get_lnames()) names.push_back(l);
  std::string text;
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) continue;
    const std::string name = arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string best;
    std::size_t bestDistance = 1 + name.size() / 4 + 1;
    for (const std::string& n : names) {
      const std::size_t d = editDistance(name, n);
      if (d < bestDistance) bestDistance = d, best = n;
    }
    text += std::string(text.empty() ? "" : "; ") + "unknown flag --" + printable(shortened(name, 64)) + " for " +
            cmd.get_name() + (best.empty() ? "" : " (did you mean --" + best + "?)");
  }
  return text;
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
