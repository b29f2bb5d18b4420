// harness/results.h — the versioned results file (schema "tpbench.results/1", documented field
// by field in results/README.md). One JSON document: {"schema", "meta", "runs", "allreduce"}.
// Sweeps append one record per point and save() after each, so a crash or a kill loses at most
// the point in flight; save() is atomic (temp file + fsync + rename), never a torn file.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpb {

constexpr const char* kResultsSchema = "tpbench.results/1";

// The "meta" block: versions, host, build, and the command line that produced the file.
nlohmann::json collectMeta(const std::string& command);

// Names of the GPUs this process can see, for meta.gpus. A hook for the CUDA-aware part of the
// build to fill in; this file knows no CUDA and returns {}.
std::vector<std::string> visibleGpuNames();

class ResultsFile {
 public:
  // A new, empty document for `path`; nothing is written until save().
  static ResultsFile create(const std::string& path, nlohmann::json meta);
  // Reads an existing file. Throws tpb::UsageError naming the path when it cannot be read, is not
  // JSON, or has a schema other than kResultsSchema (the message says which schema it found).
  static ResultsFile load(const std::string& path);

  void addRun(nlohmann::json run);
  void addAllreduce(nlohmann::json rec);

  const nlohmann::json& doc() const { return doc_; }
  nlohmann::json& doc() { return doc_; }
  const std::string& path() const { return path_; }

  // Rewrites the whole file atomically (writeFileAtomic). Throws tpb::Error on failure; the
  // previous content of the file is then untouched.
  void save() const;

 private:
  ResultsFile(std::string path, nlohmann::json doc);
  std::string path_;
  nlohmann::json doc_;
};

// Checks, before anything is launched, that `path` can be written: creates the parent directory
// (with its parents) when missing, and checks that a file can be created in it and, if `path`
// exists, that it is a writable regular file. Leaves no file behind. Throws tpb::UsageError
// "<flag>: cannot write '<path>': <reason>".
void checkWritable(const std::string& flag, const std::string& path);

// Writes `contents` to `path` + ".tmp.<pid>" in the same directory, fsyncs it, renames it over
// `path` and fsyncs the directory: readers see the old file or the new one, never a mix. An
// existing file keeps its permission bits. Throws tpb::Error (the temp file is removed).
void writeFileAtomic(const std::string& path, const std::string& contents);

}  // namespace tpb
