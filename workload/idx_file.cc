#include "workload/idx_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/out_file.h"

namespace tpb {

namespace {

struct IdxType {
  unsigned char code;
  torch::ScalarType type;
  std::size_t size;
};

constexpr IdxType kTypes[] = {
    {0x08, torch::kUInt8, 1}, {0x0C, torch::kInt32, 4}, {0x0D, torch::kFloat32, 4}, {0x0E, torch::kFloat64, 8}};

// Reverses each element's bytes in place (IDX is big-endian; every host tpbench runs on is little).
void swapElements(unsigned char* p, std::size_t bytes, std::size_t size) {
  if (size == 1) return;
  for (std::size_t i = 0; i < bytes; i += size) {
    for (std::size_t a = i, b = i + size - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
  }
}

class Fd {
 public:
  Fd(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    TPB_CHECK_ERRNO(fd_, "open(" << path << ")");
  }
  ~Fd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads up to n bytes; returns how many (fewer only at the end of the file).
std::size_t readSome(int fd, unsigned char* p, std::size_t n, const std::string& path) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    TPB_CHECK_ERRNO(r, "read(" << path << ")");
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

void writeIdx(const std::string& path, const torch::Tensor& tensor) {
  const IdxType* type = nullptr;
  for (const auto& t : kTypes)
    if (t.type == tensor.scalar_type()) type = &t;
  if (!type) TPB_THROW(Error, "writeIdx(" << path << "): IDX has no type for " << tensor.scalar_type());
  TPB_CHECK(tensor.dim() < 256, "writeIdx(" << path << "): too many dimensions");
  const torch::Tensor t = tensor.to(torch::kCPU).contiguous();
  std::vector<unsigned char> head = {0, 0, type->code, static_cast<unsigned char>(t.dim())};
  for (const auto d : t.sizes()) {
    TPB_CHECK(d <= 0xFFFFFFFFLL, "writeIdx(" << path << "): dimension " << d << " exceeds IDX's 32 bits");
    const auto v = static_cast<std::uint32_t>(d);
    for (int shift = 24; shift >= 0; shift -= 8) head.push_back(static_cast<unsigned char>(v >> shift));
  }
  AtomicFile out(path);  // never through a link at `path`; no torn file
  out.write(head.data(), head.size());
  // In chunks, so a large dataset is never copied whole.
  const auto* src = static_cast<const unsigned char*>(t.data_ptr());
  const std::size_t total = static_cast<std::size_t>(t.numel()) * type->size;
  std::vector<unsigned char> chunk(std::min<std::size_t>(total, 1 << 20));
  for (std::size_t off = 0; off < total; off += chunk.size()) {
    const std::size_t n = std::min(chunk.size(), total - off);
    std::memcpy(chunk.data(), src + off, n);
    swapElements(chunk.data(), n, type->size);
    out.write(chunk.data(), n);
  }
  out.commit();
}

torch::Tensor readIdx(const std::string& path) {
  Fd fd(path, O_RDONLY);
  unsigned char magic[4];
  if (readSome(fd.get(), magic, 4, path) != 4 || magic[0] != 0 || magic[1] != 0)
    TPB_THROW(Error, path << ": not an IDX file");
  const IdxType* type = nullptr;
  for (const auto& t : kTypes)
    if (t.code == magic[2]) type = &t;
  if (!type) TPB_THROW(Error, path << ": IDX type 0x" << std::hex << int{magic[2]} << " is not one tpbench reads");
  std::vector<std::int64_t> dims(magic[3]);
  for (auto& d : dims) {
    unsigned char b[4];
    if (readSome(fd.get(), b, 4, path) != 4) TPB_THROW(Error, path << ": IDX header cut short");
    d = (std::int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  }
  torch::Tensor t = torch::empty(dims, torch::TensorOptions().dtype(type->type));
  const std::size_t want = static_cast<std::size_t>(t.numel()) * type->size;
  auto* dst = static_cast<unsigned char*>(t.data_ptr());
  unsigned char extra;
  const std::size_t got = readSome(fd.get(), dst, want, path);
  if (got != want || readSome(fd.get(), &extra, 1, path) != 0)
    TPB_THROW(Error, path << ": IDX body is " << (got != want ? "shorter" : "longer") << " than its header's "
                          << want << " bytes");
  swapElements(dst, want, type->size);
  return t;
}

}  // namespace tpb
