#include "record/results.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "common/error.h"

namespace tpb {
namespace {

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

std::string parentDir(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// "<dir>/.<name>.XXXXXX": the template mkostemp fills with an unpredictable suffix.
std::string tempTemplate(const std::string& path) {
  const std::filesystem::path p(path);
  return (std::filesystem::path(parentDir(path)) / ("." + p.filename().string() + ".XXXXXX")).string();
}

// Creates a fresh temp file beside `path` (O_EXCL, O_CLOEXEC); returns its fd and fills `tmp`.
int createTempBeside(const std::string& path, std::string& tmp) {
  tmp = tempTemplate(path);
  return ::mkostemp(tmp.data(), O_CLOEXEC);
}

// The process umask, read without changing it (umask(2) would, for every thread at once).
mode_t currentUmask() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  }
  return 022;
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

ResultsFile ResultsFile::load(const std::string& path) {
  const json doc = readJsonBounded(path);
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
  if (schema->get<std::string>() != kResultsSchema) {
    TPB_THROW(UsageError, "'" << path << "' has schema '" << oneLine(schema->get<std::string>())
                              << "'; this tpbench reads '" << kResultsSchema << "'");
  }
  ResultsFile f(path);
  try {
    const JsonIn top(doc, path);
    // Each part may be absent (an empty list, an empty meta); present, it must have its type.
    if (const auto m = top.find("meta")) f.meta_ = Meta::fromJson(*m);
    if (const auto runs = top.find("runs")) {
      for (std::size_t i = 0; i < runs->size(); ++i) f.runs_.push_back(RunRecord::fromJson((*runs)[i]));
    }
    if (const auto ar = top.find("allreduce")) {
      for (std::size_t i = 0; i < ar->size(); ++i)
        f.collectives_.push_back(CollectiveRecord::fromJson((*ar)[i]));
    }
    f.extra_ = top.extraExcept({"schema", "meta", "runs", "allreduce"});
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
  return d;
}

void ResultsFile::save() const {
  // Error messages recorded in runs may carry bytes that are not UTF-8: replace, don't throw.
  writeFileAtomic(path_, doc().dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

void writeFileAtomic(const std::string& path, const std::string& contents) {
  std::string tmp;
  const int fd = createTempBeside(path, tmp);
  if (fd < 0) {
    const int err = errno;
    TPB_THROW(Error, "cannot create a temp file in '" << parentDir(path) << "' to write '" << path
                                                      << "': " << errnoText(err));
  }
  auto fail = [&](const char* what, bool open) {
    const int err = errno;
    if (open) ::close(fd);
    ::unlink(tmp.c_str());
    TPB_THROW(Error, "writing '" << path << "' failed at " << what << ": " << errnoText(err));
  };
  // mkostemp made it 0600: give it the old file's bits, or what open(0666) would have given.
  struct stat old {};
  const mode_t mode = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode) ? (old.st_mode & 07777)
                                                                              : (0666 & ~currentUmask());
  if (::fchmod(fd, mode) != 0) fail("fchmod", true);
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", true);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync", true);
  if (::close(fd) != 0) fail("close", false);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", false);
  // Make the rename itself durable. Best effort: some file systems refuse fsync on directories.
  const int dfd = ::open(parentDir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

OutLock::OutLock(const std::string& flag, const std::string& path) : lockPath_(lockPath(path)) {
  auto fail = [&](const std::string& reason) {
    TPB_THROW(UsageError, flag << ": cannot lock '" << path << "': " << reason);
  };
  // Retry when the file we locked was removed (or replaced) by its previous owner's release in
  // between our open and our flock: that lock guards nothing.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lockPath_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
    if (fd < 0) fail("'" + lockPath_ + "': " + errnoText(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {};
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) fail("flock: " + errnoText(err));
      const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
      TPB_THROW(UsageError, flag << ": " << path << " is being written by another tpbench (pid "
                                 << (pid > 0 ? std::to_string(pid) : std::string("unknown")) << ")");
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::lstat(lockPath_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        const int err = errno;
        ::close(fd);
        ::unlink(lockPath_.c_str());
        fail("writing '" + lockPath_ + "': " + errnoText(err));
      }
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  fail("'" + lockPath_ + "' keeps changing");
}

OutLock::~OutLock() {
  if (fd_ < 0) return;
  // Unlink while still holding the lock, so no one can lock the name we are removing.
  ::unlink(lockPath_.c_str());
  ::close(fd_);
}

void checkWritable(const std::string& flag, const std::string& path) {
  auto fail = [&](const std::string& reason) {
    TPB_THROW(UsageError, flag << ": cannot write '" << path << "': " << reason);
  };
  if (path.empty()) fail("the path is empty");
  namespace fs = std::filesystem;
  if (fs::path(path).filename().empty()) fail("the path names a directory");

  const std::string parent = parentDir(path);
  std::error_code ec;
  const fs::file_status st = fs::status(parent, ec);
  if (!fs::exists(st)) {
    ec.clear();
    fs::create_directories(parent, ec);
    if (ec) fail("cannot create directory '" + parent + "': " + ec.message());
  } else if (!fs::is_directory(st)) {
    fail("'" + parent + "' is not a directory");
  }

  struct stat target {};
  if (::stat(path.c_str(), &target) == 0) {
    if (S_ISDIR(target.st_mode)) fail("it is a directory");
    // Saving renames a new file over the target: never do that to a device or a FIFO.
    if (!S_ISREG(target.st_mode)) fail("it is not a regular file");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) fail(errnoText(errno));
    ::close(fd);
  } else if (errno != ENOENT) {
    fail(errnoText(errno));
  }

  // save() creates a temp file next to the target: create one the same way, then remove it.
  std::string probe;
  const int fd = createTempBeside(path, probe);
  if (fd < 0) fail("cannot create a file in '" + parent + "': " + errnoText(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace tpb
