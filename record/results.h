// record/results.h — the versioned results file (schema "tpbench.results/1", documented field
// by field in results/README.md): {"schema", "meta", "runs", "allreduce"} held as typed records
// (record/records.h). Sweeps append one record per point and save() after each, so a crash or a
// kill loses at most the point in flight; save() is atomic (private temp file + fsync + rename),
// never a torn file. OutLock keeps a second tpbench from writing the same file at once.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/records.h"

namespace tpb {

// What load() accepts before parsing: a results file is untrusted input, and the JSON parser and
// the records it builds are recursive.
constexpr std::size_t kMaxResultsBytes = std::size_t{512} << 20;
constexpr int kMaxResultsDepth = 64;

class ResultsFile {
 public:
  // A new, empty document for `path`; nothing is written until save().
  static ResultsFile create(const std::string& path, Meta meta);
  // Reads an existing file. Throws tpb::UsageError (one line, naming the path and, for a bad
  // record, the field: "x.json: runs[3].config.n_gpus: expected ...") when it cannot be read, is
  // larger than kMaxResultsBytes, nests deeper than kMaxResultsDepth, is not JSON, has a schema
  // other than kResultsSchema, or holds a field of the wrong type or out of its range.
  static ResultsFile load(const std::string& path);

  const std::string& path() const { return path_; }
  const Meta& meta() const { return meta_; }
  Meta& meta() { return meta_; }
  const std::vector<RunRecord>& runs() const { return runs_; }
  std::vector<RunRecord>& runs() { return runs_; }
  const std::vector<CollectiveRecord>& collectives() const { return collectives_; }
  std::vector<CollectiveRecord>& collectives() { return collectives_; }
  // Top-level members other than the four above ("reference", or what another version added).
  const nlohmann::json& extra() const { return extra_; }
  nlohmann::json& extra() { return extra_; }

  void addRun(RunRecord run) { runs_.push_back(std::move(run)); }
  void addCollective(CollectiveRecord rec) { collectives_.push_back(std::move(rec)); }

  // The whole document as it is written, built on each call (a value, not a view).
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
  nlohmann::json extra_ = nlohmann::json::object();
};

// Reads a JSON document from an untrusted file: refuses (UsageError naming the file as `what`,
// "results file '<path>' ...") a file over `maxBytes` or nesting deeper than `maxDepth` before
// the parser sees it, and text that is not JSON.
nlohmann::json readJsonBounded(const std::string& path, const char* what = "results file",
                               std::size_t maxBytes = kMaxResultsBytes, int maxDepth = kMaxResultsDepth);

// Checks, before anything is launched, that `path` can be written: creates the parent directory
// (with its parents) when missing, and checks that a file can be created in it and, if `path`
// exists, that it is a writable regular file. Leaves no file behind. Throws tpb::UsageError
// "<flag>: cannot write '<path>': <reason>".
void checkWritable(const std::string& flag, const std::string& path);

// Creates a file beside `path` exclusively (as writeFileAtomic's temp file) and removes it: 0
// when that worked, else the errno. A real test, where access(2) says yes to root in /proc or on
// a read-only mount.
int probeCreateBeside(const std::string& path);

// Writes `contents` to a new temp file in `path`'s directory, created exclusively under a name
// no other process can predict (mkostemp: O_EXCL, O_CLOEXEC, mode 0600 until fchmod), fsyncs it,
// renames it over `path` and fsyncs the directory: readers see the old file or the new one, never
// a mix, and a link planted in the directory is never followed. An existing file keeps its
// permission bits; a new one gets 0666 less the umask. Throws tpb::Error; the temp file is
// removed on every failure.
void writeFileAtomic(const std::string& path, const std::string& contents);

// Exclusive right to write one results file for as long as it lives: an flock on the sidecar
// "<path>.lock" (opened O_NOFOLLOW | O_CLOEXEC, holding the owner's pid), removed on release.
class OutLock {
 public:
  // Throws tpb::UsageError "<flag>: <path> is being written by another tpbench (pid N)" when
  // another process holds it, or "<flag>: cannot lock '<path>': <reason>".
  OutLock(const std::string& flag, const std::string& path);
  ~OutLock();
  OutLock(const OutLock&) = delete;
  OutLock& operator=(const OutLock&) = delete;

  static std::string lockPath(const std::string& path) { return path + ".lock"; }

 private:
  std::string lockPath_;
  int fd_ = -1;
};

}  // namespace tpb
