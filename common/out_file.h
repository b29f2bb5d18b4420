// common/out_file.h — how tpbench creates every file and directory it writes (results, traces,
// models, reports and their charts, checkpoints, job files, IDX files): never through a link or
// another file already sitting at the name, and never leaving a torn file. Every writer goes
// through AtomicFile (a private temp file beside the target, then rename(2), which replaces a
// link at the target instead of following it). OutLock keeps a second tpbench from writing the
// same output at once; createDirectories remembers what it made, so that a refused command
// (exit 2) removes it again (removeCreatedDirectories).
#pragma once

#include <cstddef>
#include <string>

namespace tpb {

// A new file that takes `path`'s place only once it is whole. The temp file is created beside
// `path` exclusively under a name no other process can predict (mkostemp: O_EXCL, O_CLOEXEC,
// mode 0600 until commit), so a link planted in the directory is never followed; commit()
// fsyncs it, renames it over `path` and fsyncs the directory: readers see the old file or the
// new one, never a mix. An existing regular file keeps its permission bits; a new one gets 0666
// less the umask. Throws tpb::Error naming `path`; the temp file never outlives the object
// unless committed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  void commit();

 private:
  [[noreturn]] void fail(const char* step);
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// AtomicFile in one call: `contents` becomes `path`.
void writeFileAtomic(const std::string& path, const std::string& contents);

// Checks, before anything is launched, that `path` can be written: creates the parent directory
// (with its parents, createDirectories) when missing, and checks that a file can be created in
// it and, if `path` exists, that it is a writable regular file and not a symbolic link (a link
// at an output path is refused, never written through nor silently replaced). Leaves no file
// behind. Throws tpb::UsageError "<flag>: cannot write '<path>': <reason>".
void checkWritable(const std::string& flag, const std::string& path);

// Creates a file beside `path` exclusively (as AtomicFile's temp file) and removes it: 0 when
// that worked, else the errno. A real test, where access(2) says yes to root in /proc or on a
// read-only mount.
int probeCreateBeside(const std::string& path);

// Creates `dir` and its missing parents and remembers each one it made. Throws tpb::UsageError
// "<flag>: cannot create directory '<dir>': <reason>".
void createDirectories(const std::string& flag, const std::string& dir);
// Removes, deepest first, the directories createDirectories made in this process that are still
// empty (rmdir: never anything in them). main calls it when a command is refused, so that
// nothing a refused command created remains.
void removeCreatedDirectories();

// Exclusive right to write one output (a file, or a directory such as --save_dir) for as long as
// it lives: an flock on the sidecar "<path>.lock", or on `lockFile` when given (opened
// O_NOFOLLOW | O_CLOEXEC, holding the owner's pid), removed on release.
class OutLock {
 public:
  // Throws tpb::UsageError "<flag>: <path> is being written by another tpbench (pid N)" when
  // another process holds it, or "<flag>: cannot lock '<path>': <reason>".
  OutLock(const std::string& flag, const std::string& path, const std::string& lockFile = "");
  ~OutLock();
  OutLock(const OutLock&) = delete;
  OutLock& operator=(const OutLock&) = delete;

  // "<path>.lock", for a directory written with or without its trailing '/'.
  static std::string lockPath(const std::string& path);

 private:
  std::string lockPath_;
  int fd_ = -1;
};

}  // namespace tpb
