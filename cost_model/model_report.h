// cost_model/model_report.h — `tpbench model`: reads results files, fits the α-β model
// (cost_model/alpha_beta.h) and prints, clearly split, what was MEASURED (fits, their error, the
// leave-one-out table, crossovers of the fitted lines) and what is PROJECTED (other sizes and
// rank counts from each algorithm's formula, and --link presets from published figures);
// optionally writes it all as JSON (schema "tpbench.model/1").
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpb::model {

struct ModelOptions {
  std::vector<std::string> files;
  std::string out;   // JSON file; empty: none
  bool overwrite = false;  // --overwrite: replace an existing model file instead of refusing
  std::string link;  // a preset name; empty: every preset
  bool allowBusy = false;  // --allow_busy: fit groups whose smallest sizes sit on a scheduler tick (untrusted)
};

// Throws UsageError for unreadable files or a file with nothing to fit. Returns the JSON document
// it wrote (or would have written).
nlohmann::json runModel(const ModelOptions& opt, std::ostream& os);

}  // namespace tpb::model
