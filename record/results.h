// record/results.h — the versioned results file (schema "tpbench.results/2", documented field
// by field in results/README.md): {"schema", "meta", "runs", "allreduce"} and, from `predict`,
// "predictions", held as typed records (record/records.h, record/prediction_record.h). Sweeps append one record per point and save() after each, so a crash or a
// kill loses at most the point in flight; save() is atomic (private temp file + fsync + rename),
// never a torn file. OwnedOutput claims a results (trace, model) file for one command: the lock
// and the rule for what may happen to a file already there.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/out_file.h"
#include "record/prediction_record.h"
#include "record/records.h"

namespace tpb {

// What load() accepts before parsing: a results file is untrusted input, and the JSON parser and
// the records it builds are recursive.
constexpr std::size_t kMaxResultsBytes = std::size_t{512} << 20;
constexpr int kMaxResultsDepth = 64;
// The most collective points a results file holds: load() refuses more, save() writes no more, and
// `import` stops there, so that no command writes a file the others refuse. (A sweep is limited
// to far fewer, harness/input_checks.h; at about 1 KB each, this many stay under kMaxResultsBytes.)
constexpr std::size_t kMaxCollectiveRecords = 200000;

class ResultsFile {
 public:
  // A new, empty document for `path`; nothing is written until save().
  static ResultsFile create(const std::string& path, Meta meta);
  // Reads an existing file. Throws tpb::UsageError (one line, naming the path and, for a bad
  // record, the field: "x.json: runs[3].config.n_gpus: expected ...") when it cannot be read, is
  // larger than kMaxResultsBytes, nests deeper than kMaxResultsDepth, is not JSON, has a schema
  // other than kResultsSchema, or holds a field of the wrong type or out of its range.
  static ResultsFile load(const std::string& path);
  // The same from a parsed document; `path` names it in errors.
  static ResultsFile fromDocument(const nlohmann::json& doc, const std::string& path);

  const std::string& path() const { return path_; }
  const Meta& meta() const { return meta_; }
  Meta& meta() { return meta_; }
  const std::vector<RunRecord>& runs() const { return runs_; }
  std::vector<RunRecord>& runs() { return runs_; }
  const std::vector<CollectiveRecord>& collectives() const { return collectives_; }
  std::vector<CollectiveRecord>& collectives() { return collectives_; }
  const std::vector<PredictionRecord>& predictions() const { return predictions_; }
  std::vector<PredictionRecord>& predictions() { return predictions_; }
  // Top-level members other than those above ("reference", or what another version added).
  const nlohmann::json& extra() const { return extra_; }
  nlohmann::json& extra() { return extra_; }

  void addRun(RunRecord run) { runs_.push_back(std::move(run)); }
  void addCollective(CollectiveRecord rec) { collectives_.push_back(std::move(rec)); }
  void addPrediction(PredictionRecord rec) { predictions_.push_back(std::move(rec)); }

  // The whole document as it is written, built on each call (a value, not a view); "predictions"
  // only where there are some (files without them read as they always did).
  nlohmann::json doc() const;

  // Rewrites the whole file atomically (writeFileAtomic). Throws tpb::Error on failure; the
  // previous content of the file is then untouched.
  void save() const;

 private:
  explicit ResultsFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
  Meta meta_;
  std::vector<RunRecord> runs_;
  std::vector<CollectiveRecord> collectives_;
  std::vector<PredictionRecord> predictions_;
  nlohmann::json extra_ = nlohmann::json::object();
};

// Reads a JSON document from an untrusted file: refuses (UsageError naming the file as `what`,
// "results file '<path>' ...") a file over `maxBytes` or nesting deeper than `maxDepth` before
// the parser sees it, and text that is not JSON.
nlohmann::json readJsonBounded(const std::string& path, const char* what = "results file",
                               std::size_t maxBytes = kMaxResultsBytes, int maxDepth = kMaxResultsDepth);

// The *.json names in directory `dir`, sorted (for `compare --paired` and `history`, whose
// directories hold a series of results files). `flag` names the input in errors. Throws
// UsageError where dir is not a directory (or is a link to one), cannot be listed, or holds a
// *.json entry that is not a regular file (a link is refused, not followed); other names, and
// hidden ones (".x.json"), are not read.
std::vector<std::string> jsonFilesIn(const std::string& dir, const std::string& flag);

// What a command may do to an output file that is already there.
struct OutputFlags {
  bool resume = false;     // --resume given: continue it
  bool overwrite = false;  // --overwrite given: replace it
  bool resumable = true;   // the command has --resume at all (run, allreduce, collective, model do not)
};

// A kind of file tpbench writes: the schema that marks one ("tpbench.results/1" and later
// versions share the part before the version) and how messages name it.
struct OutputKind {
  const char* schemaPrefix;  // "tpbench.results/": top-level "schema", or "tpbench"."schema" of a trace
  const char* noun;          // "tpbench results file"
};
inline constexpr OutputKind kResultsOutput{"tpbench.results/", "tpbench results file"};
inline constexpr OutputKind kTraceOutput{"tpbench.trace/", "tpbench trace"};
inline constexpr OutputKind kModelOutput{"tpbench.model/", "tpbench model"};

// One output file a command owns for as long as it runs, claimed before anything is launched:
// checkWritable (a link, a directory, a device are refused), then an OutLock, then the rule for
// what is already there. Nothing, or an empty file (it holds nothing to lose), is written new;
// a file of `kind` is continued with --resume, replaced with --overwrite, and otherwise refused;
// any other file is refused, with --overwrite too: tpbench never replaces what it did not write.
// Throws tpb::UsageError, one line naming `flag` and the path and saying what to add.
class OwnedOutput {
 public:
  OwnedOutput(const std::string& flag, const std::string& path, const OutputKind& kind, const OutputFlags& flags);
  // Whether a file of `kind` is there to continue (--resume was given and one is).
  bool continues() const { return continues_; }

 private:
  std::optional<OutLock> lock_;  // taken once checkWritable has passed
  bool continues_ = false;
};

}  // namespace tpb
