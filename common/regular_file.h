// common/regular_file.h — opening a file a user names as input (a checkpoint, a dataset file)
// without trusting what it is. The open never blocks (O_NONBLOCK: a FIFO with no writer would
// hang a plain open forever), and the type is checked on the opened descriptor (fstat), so a
// FIFO, a device such as /dev/zero, a directory or a socket is refused by name, and a path
// swapped between a check and the open cannot slip one in. Symbolic links are followed: the file
// they reach is what gets checked. LibTorch-free, for the fuzzers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpb {

class RegularFile {
 public:
  // `label` starts every error ("--resume_from", "--dataset"): UsageError "<label> <path>: why".
  RegularFile(const std::string& label, const std::string& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  std::uint64_t size() const { return size_; }
  // Up to n bytes from `offset` (fewer only at the end of the file).
  std::size_t readAt(std::uint64_t offset, unsigned char* p, std::size_t n) const;
  // The whole file; refused, before reading anything, when it is larger than maxBytes (`why`
  // says what bounds it), and when it changes size while being read.
  std::vector<unsigned char> readAll(std::uint64_t maxBytes, const std::string& why) const;

  [[noreturn]] void refuse(const std::string& why) const;

 private:
  std::string label_, path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace tpb
