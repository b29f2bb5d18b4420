#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace tpb {

namespace {

const char* typeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

RegularFile::RegularFile(const std::string& label, const std::string& path) : label_(label), path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) refuse(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  const bool statted = ::fstat(fd_, &st) == 0;
  const int err = errno;
  if (statted && S_ISREG(st.st_mode)) {
    size_ = static_cast<std::uint64_t>(st.st_size);
    return;
  }
  ::close(fd_);  // a throwing constructor runs no destructor
  fd_ = -1;
  if (!statted) refuse(std::string("cannot stat: ") + std::strerror(err));
  refuse(std::string("is ") + typeName(st.st_mode) + ", not a regular file");
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RegularFile::refuse(const std::string& why) const { TPB_THROW(UsageError, label_ << " " << path_ << ": " << why); }

std::size_t RegularFile::readAt(std::uint64_t offset, unsigned char* p, std::size_t n) const {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) refuse(std::string("cannot read: ") + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

std::vector<unsigned char> RegularFile::readAll(std::uint64_t maxBytes, const std::string& why) const {
  if (size_ > maxBytes)
    refuse(std::to_string(size_) + " bytes, more than the " + std::to_string(maxBytes) + " " + why);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size_));
  unsigned char extra;
  if (readAt(0, bytes.data(), bytes.size()) != bytes.size() || readAt(size_, &extra, 1) != 0)
    refuse("changed size while being read");
  return bytes;
}

}  // namespace tpb
