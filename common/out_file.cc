#include "common/out_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <utility>
#include <vector>

#include "common/error.h"

namespace tpb {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

std::string parentDir(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Creates a fresh temp file "<dir>/.<name>.XXXXXX" beside `path` (O_EXCL, O_CLOEXEC, an
// unpredictable suffix); returns its fd and fills `tmp`.
int createTempBeside(const std::string& path, std::string& tmp) {
  const std::filesystem::path p(path);
  tmp = (std::filesystem::path(parentDir(path)) / ("." + p.filename().string() + ".XXXXXX")).string();
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

// The directories createDirectories made, in the order it made them.
std::mutex gCreatedMutex;
std::vector<std::string> gCreated;

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  fd_ = createTempBeside(path_, tmp_);
  if (fd_ < 0) {
    const int err = errno;
    TPB_THROW(Error, "cannot create a temp file in '" << parentDir(path_) << "' to write '" << path_
                                                      << "': " << errnoText(err));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const char* step) {
  const int err = errno;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  committed_ = true;  // nothing left to remove
  TPB_THROW(Error, "writing '" << path_ << "' failed at " << step << ": " << errnoText(err));
}

void AtomicFile::write(const void* data, std::size_t n) {
  TPB_CHECK(!committed_ && fd_ >= 0, "AtomicFile: write after commit");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  TPB_CHECK(!committed_ && fd_ >= 0, "AtomicFile: committed twice");
  // mkostemp made it 0600: give it the old file's bits, or what open(0666) would have given.
  // lstat: a link at the target lends it nothing.
  struct stat old {};
  const mode_t mode = ::lstat(path_.c_str(), &old) == 0 && S_ISREG(old.st_mode) ? (old.st_mode & 07777)
                                                                                 : (0666 & ~currentUmask());
  if (::fchmod(fd_, mode) != 0) fail("fchmod");
  if (::fsync(fd_) != 0) fail("fsync");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename");
  committed_ = true;
  // Make the rename itself durable. Best effort: some file systems refuse fsync on directories.
  const int dfd = ::open(parentDir(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void writeFileAtomic(const std::string& path, const std::string& contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

namespace {

// createDirectories without the flag: "" when `dir` is a directory now, else why not.
std::string makeDirectories(const std::string& dir) {
  // The missing ones, deepest first; then made from the top down.
  std::vector<std::string> missing;
  struct stat st {};
  for (std::filesystem::path p(dir); !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) == 0) break;
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      std::lock_guard<std::mutex> lock(gCreatedMutex);
      gCreated.push_back(*it);
    } else if (errno != EEXIST) {
      const int err = errno;
      return (*it == dir ? "" : "'" + *it + "': ") + errnoText(err);
    }
  }
  if (::stat(dir.c_str(), &st) != 0) return errnoText(errno);
  return S_ISDIR(st.st_mode) ? "" : "not a directory";
}

}  // namespace

void createDirectories(const std::string& flag, const std::string& dir) {
  if (const std::string why = makeDirectories(dir); !why.empty())
    TPB_THROW(UsageError, flag << ": cannot create directory '" << dir << "': " << why);
}

void removeCreatedDirectories() {
  std::lock_guard<std::mutex> lock(gCreatedMutex);
  for (auto it = gCreated.rbegin(); it != gCreated.rend(); ++it) (void)::rmdir(it->c_str());
  gCreated.clear();
}

void checkWritable(const std::string& flag, const std::string& path) {
  auto fail = [&](const std::string& reason) {
    TPB_THROW(UsageError, flag << ": cannot write '" << path << "': " << reason);
  };
  if (path.empty()) fail("the path is empty");
  if (std::filesystem::path(path).filename().empty()) fail("the path names a directory");

  // Links above the file are the user's own path to it; only the file's own name must not be one.
  const std::string parent = parentDir(path);
  struct stat st {};
  if (::stat(parent.c_str(), &st) != 0) {
    if (errno != ENOENT) fail("'" + parent + "': " + errnoText(errno));
    if (const std::string why = makeDirectories(parent); !why.empty())
      fail("cannot create directory '" + parent + "': " + why);
  } else if (!S_ISDIR(st.st_mode)) {
    fail("'" + parent + "' is not a directory");
  }

  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      fail("it is a symbolic link; tpbench does not write through links (name the file itself)");
    if (S_ISDIR(st.st_mode)) fail("it is a directory");
    // Saving renames a new file over the target: never do that to a device or a FIFO.
    if (!S_ISREG(st.st_mode)) fail("it is not a regular file");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) fail(errnoText(errno));
    ::close(fd);
  } else if (errno != ENOENT) {
    fail(errnoText(errno));
  }

  // Saving creates a temp file next to the target: create one the same way, then remove it.
  if (const int err = probeCreateBeside(path)) fail("cannot create a file in '" + parent + "': " + errnoText(err));
}

int probeCreateBeside(const std::string& path) {
  std::string probe;
  const int fd = createTempBeside(path, probe);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

std::string OutLock::lockPath(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p + ".lock";
}

OutLock::OutLock(const std::string& flag, const std::string& path, const std::string& lockFile)
    : lockPath_(lockFile.empty() ? lockPath(path) : lockFile) {
  auto fail = [&](const std::string& reason) {
    TPB_THROW(UsageError, flag << ": cannot lock '" << path << "': " << reason);
  };
  // Retry when the file we locked was removed (or replaced) by its previous owner's release in
  // between our open and our flock: that lock guards nothing.
  // What sits at the lock's name and is no lock tpbench made (a planted link, a directory, a
  // FIFO) is refused by name, and never opened, written or removed.
  const auto notALock = [&](const struct stat& st) {
    fail("'" + lockPath_ + "' is " + (S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
         ", not a lock tpbench made: move it away");
  };
  for (int attempt = 0; attempt < 100; ++attempt) {
    struct stat there {};
    if (::lstat(lockPath_.c_str(), &there) == 0 && !S_ISREG(there.st_mode)) notALock(there);
    const int fd = ::open(lockPath_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ELOOP && ::lstat(lockPath_.c_str(), &there) == 0) notALock(there);
    if (fd < 0) fail("'" + lockPath_ + "': " + errnoText(errno));
    struct stat opened {};
    if (::fstat(fd, &opened) == 0 && !S_ISREG(opened.st_mode)) {
      ::close(fd);
      notALock(opened);
    }
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

}  // namespace tpb
