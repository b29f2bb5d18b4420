#include "record/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/error.h"

namespace tpb {
namespace {

// Schema 1 counted a step on every rank that trained: the strategies that start a process per
// data rank summed their ranks' steps (ddp, its alias, ring_all_reduce and torch_ddp over N ranks;
// param_server over its N-1 workers). Each step of the model was taken by all of them alike (the
// loop is synchronous), so dividing gives each once; a count that does not divide (a rank cut
// short by a failure) rounds up, as the slowest rank's count would.
void stepsOfSchema1(RunRecord& r) {
  const std::string& s = r.config.strategy;
  const int n = r.config.nGpus;
  int counted = 1;
  if (s == "ddp" || s == "ring_all_reduce_builtin" || s == "ring_all_reduce" || s == "torch_ddp") counted = n;
  if (s == "param_server" && n > 1) counted = n - 1;
  if (counted <= 1) return;
  for (EpochRecord& e : r.epochs)
    if (e.steps) *e.steps = (*e.steps + counted - 1) / counted;
}

// Input quoted in a refusal keeps it one printable line: control characters (line breaks, a
// terminal's escape sequences, which nlohmann's "last read: '...'" and a schema string carry
// raw) become spaces.
std::string oneLine(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

using nlohmann::json;

std::string errnoText(int err) { return std::strerror(err); }

[[noreturn]] void cannotRead(const char* what, const std::string& path, const std::string& why) {
  TPB_THROW(UsageError, "cannot read " << what << " '" << path << "': " << why);
}

// The whole file, refusing anything but a regular file of at most maxBytes. O_NONBLOCK keeps a
// FIFO from blocking the open; it means nothing for the regular file that is then read.
std::string readBounded(const char* what, const std::string& path, std::size_t maxBytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) cannotRead(what, path, errnoText(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) cannotRead(what, path, errnoText(errno));
  if (S_ISDIR(st.st_mode)) cannotRead(what, path, "it is a directory");
  if (!S_ISREG(st.st_mode)) cannotRead(what, path, "not a regular file");
  auto tooBig = [&] {
    TPB_THROW(UsageError, what << " '" << path << "' is larger than " << (maxBytes >> 20)
                               << " MiB; refusing to read it");
  };
  if (static_cast<std::uint64_t>(st.st_size) > maxBytes) tooBig();
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      cannotRead(what, path, errnoText(errno));
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > maxBytes) tooBig();  // grew while we read
  }
  return text;
}

// Nesting depth of brackets outside strings: the parser and the records are recursive, so a
// file of 100000 '[' must be refused before either sees it.
void checkDepth(const char* what, const std::string& path, const std::string& text, int maxDepth) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (const char ch : text) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        inString = false;
      }
      continue;
    }
    if (ch == '"') {
      inString = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > maxDepth)
        TPB_THROW(UsageError, what << " '" << path << "' nests deeper than " << maxDepth
                                   << " levels; refusing to parse it");
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
}

}  // namespace

json readJsonBounded(const std::string& path, const char* what, std::size_t maxBytes, int maxDepth) {
  const std::string text = readBounded(what, path, maxBytes);
  checkDepth(what, path, text, maxDepth);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // nlohmann's message, minus its "[json.exception.parse_error.101] " tag: one line, our prefix.
    std::string message = e.what();
    if (const auto close = message.find("] "); message.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      message = message.substr(close + 2);
    TPB_THROW(UsageError, what << " '" << path << "' is not JSON: " << oneLine(message));
  }
}

ResultsFile ResultsFile::create(const std::string& path, Meta meta) {
  ResultsFile f(path);
  f.meta_ = std::move(meta);
  return f;
}

ResultsFile ResultsFile::load(const std::string& path) { return fromDocument(readJsonBounded(path), path); }

ResultsFile ResultsFile::fromDocument(const json& doc, const std::string& path) {
  if (!doc.is_object()) {
    TPB_THROW(UsageError, "'" << path << "' is not a tpbench results file (top level is "
                              << doc.type_name() << ", not an object)");
  }
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    TPB_THROW(UsageError, "'" << path
                              << "' is not a tpbench results file (no \"schema\" string; expected '"
                              << kResultsSchema << "')");
  }
  const bool schema1 = schema->get<std::string>() == kResultsSchemaV1;
  if (!schema1 && schema->get<std::string>() != kResultsSchema) {
    TPB_THROW(UsageError, "'" << path << "' has schema '" << oneLine(schema->get<std::string>())
                              << "'; this tpbench reads '" << kResultsSchema << "' and '" << kResultsSchemaV1 << "'");
  }
  ResultsFile f(path);
  try {
    const JsonIn top(doc, path);
    // Each part may be absent (an empty list, an empty meta); present, it must have its type.
    if (const auto m = top.find("meta")) f.meta_ = Meta::fromJson(*m);
    if (const auto runs = top.find("runs")) {
      for (std::size_t i = 0; i < runs->size(); ++i) f.runs_.push_back(RunRecord::fromJson((*runs)[i]));
      if (schema1)
        for (RunRecord& r : f.runs_) stepsOfSchema1(r);
    }
    if (const auto ar = top.find("allreduce")) {
      if (ar->size() > kMaxCollectiveRecords) ar->fail("at most " + std::to_string(kMaxCollectiveRecords) + " points");
      for (std::size_t i = 0; i < ar->size(); ++i)
        f.collectives_.push_back(CollectiveRecord::fromJson((*ar)[i]));
    }
    if (const auto pr = top.find("predictions")) {
      for (std::size_t i = 0; i < pr->size(); ++i)
        f.predictions_.push_back(PredictionRecord::fromJson((*pr)[i]));
    }
    f.extra_ = top.extraExcept({"schema", "meta", "runs", "allreduce", "predictions"});
  } catch (const json::exception& e) {
    // Every read is checked first; this is the net under that, so no raw message escapes.
    TPB_THROW(UsageError, "'" << path << "': unreadable record (" << e.id << ")");
  }
  return f;
}

json ResultsFile::doc() const {
  json d = extra_;
  d["schema"] = kResultsSchema;
  d["meta"] = meta_.toJson();
  d["runs"] = json::array();
  for (const auto& r : runs_) d["runs"].push_back(r.toJson());
  d["allreduce"] = json::array();
  for (const auto& c : collectives_) d["allreduce"].push_back(c.toJson());
  if (!predictions_.empty()) {
    d["predictions"] = json::array();
    for (const auto& p : predictions_) d["predictions"].push_back(p.toJson());
  }
  return d;
}

void ResultsFile::save() const {
  // Never a file load() would refuse: the same limits, checked before anything is written.
  if (collectives_.size() > kMaxCollectiveRecords)
    TPB_THROW(UsageError, path_ << ": " << collectives_.size() << " points, more than a results file holds ("
                                << kMaxCollectiveRecords << ")");
  // Error messages recorded in runs may carry bytes that are not UTF-8: replace, don't throw.
  const std::string text = doc().dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (text.size() > kMaxResultsBytes)
    TPB_THROW(UsageError, path_ << ": " << text.size() << " bytes, more than a results file may hold ("
                                << kMaxResultsBytes << ")");
  // The text read back as load() reads it: a value out of a reader's range (an infinite
  // bandwidth, which JSON writes as null; an iteration count past int) is refused here, with the
  // reader's words, and nothing is written. One rule for every writer of results files.
  try {
    (void)fromDocument(json::parse(text), path_);
  } catch (const UsageError& e) {
    TPB_THROW(UsageError, "not written, as tpbench would not read it back: " << e.what());
  }
  writeFileAtomic(path_, text);
}

namespace {

// The schema a tpbench file names: top-level "schema" (results, model), or the trace's
// "tpbench"."schema" (its top level is Chrome's trace format). "" for anything else.
std::string schemaOf(const json& doc) {
  if (!doc.is_object()) return "";
  if (const auto s = doc.find("schema"); s != doc.end()) return s->is_string() ? s->get<std::string>() : "";
  if (const auto t = doc.find("tpbench"); t != doc.end() && t->is_object())
    if (const auto s = t->find("schema"); s != t->end() && s->is_string()) return s->get<std::string>();
  return "";
}

// Whether the regular, non-empty file at `path` is a tpbench file of `kind` (what it holds
// decides; its name does not).
bool holdsKind(const std::string& path, const OutputKind& kind) {
  try {
    return schemaOf(readJsonBounded(path, kind.noun)).rfind(kind.schemaPrefix, 0) == 0;
  } catch (const UsageError&) {
    return false;  // not JSON, too large or too deep: not ours either
  }
}

}  // namespace

OwnedOutput::OwnedOutput(const std::string& flag, const std::string& path, const OutputKind& kind,
                         const OutputFlags& flags) {
  if (flags.resume && flags.overwrite)
    TPB_THROW(UsageError, "--overwrite: cannot be combined with --resume (one continues " << flag
                                                                                         << ", the other replaces it)");
  checkWritable(flag, path);
  lock_.emplace(flag, path);
  // Under the lock: what is there now stays there until this command writes.
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || st.st_size == 0) return;  // checkWritable: a regular file
  if (!holdsKind(path, kind))
    TPB_THROW(UsageError, flag << ": '" << path << "' exists and is not a " << kind.noun
                               << "; tpbench never replaces it (name another file)");
  if (flags.resume) {
    continues_ = true;
  } else if (!flags.overwrite) {
    TPB_THROW(UsageError, flag << ": '" << path << "' is a " << kind.noun << " already; add "
                               << (flags.resumable ? "--resume to continue it or " : "") << "--overwrite to replace it");
  }
}

std::vector<std::string> jsonFilesIn(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  if (ec || !fs::is_directory(st))
    TPB_THROW(UsageError, flag << ": '" << oneLine(dir) << "' is not a directory"
                               << (fs::is_symlink(st) ? " (a link; refused)" : ""));
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    if (name[0] == '.') continue;  // hidden: an editor's or a tool's, not a round or a commit
    std::error_code ignored;
    if (!fs::is_regular_file(e.symlink_status(ignored)))
      TPB_THROW(UsageError, flag << ": '" << oneLine(e.path().string()) << "' is not a regular file (links are refused)");
    out.push_back(name);
  }
  if (ec) TPB_THROW(UsageError, flag << ": cannot list '" << oneLine(dir) << "': " << ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tpb
