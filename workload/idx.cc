#include "workload/idx.h"

#ifndef TPB_NO_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "common/error.h"
#include "common/regular_file.h"

namespace tpb {

namespace {

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  TPB_THROW(UsageError, "--dataset " << name << ": " << why);
}

// Where the bytes come from: a file read in order, or memory (the fuzzer's input). Returns how
// many it gave, 0 at the end.
using Source = std::function<std::size_t(unsigned char*, std::size_t)>;

std::size_t headerSize(IdxKind kind) { return kind == IdxKind::Images ? 16 : 8; }

std::uint32_t bigEndian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// The body length the header `h` fixes (count x 784 or count bytes: below 2^42, no overflow);
// refuses a header of another kind or of images the MLP's 784 inputs cannot take.
std::uint64_t bodySize(const unsigned char* h, IdxKind kind, const std::string& name, std::uint32_t& count) {
  const bool images = kind == IdxKind::Images;
  const std::uint32_t magic = images ? 2051 : 2049;
  if (bigEndian32(h) != magic)
    refuse(name, "has magic number " + std::to_string(bigEndian32(h)) + ", expected " + std::to_string(magic) +
                     (images ? " (an IDX image file)" : " (an IDX label file)"));
  count = bigEndian32(h + 4);
  if (!images) return count;
  const std::uint32_t rows = bigEndian32(h + 8), cols = bigEndian32(h + 12);
  if (rows != kMnistSide || cols != kMnistSide)
    refuse(name, "has " + std::to_string(rows) + "x" + std::to_string(cols) +
                     " images, the model takes 28x28 (784 inputs)");
  return std::uint64_t{count} * kMnistPixels;
}

std::string countText(std::uint32_t count, IdxKind kind) {
  return std::to_string(count) + (kind == IdxKind::Images ? " images" : " labels");
}

#ifndef TPB_NO_ZLIB
// A gzip stream inflated on demand: read() gives at most what is asked, so the caller decides how
// far it goes (a header, then the body that header promises, then one byte to see it ends).
class GzStream {
 public:
  GzStream(Source src, std::string name) : src_(std::move(src)), name_(std::move(name)) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) refuse(name_, "cannot start inflating");  // 16: gzip only
  }
  ~GzStream() { inflateEnd(&z_); }
  GzStream(const GzStream&) = delete;
  GzStream& operator=(const GzStream&) = delete;

  std::size_t read(unsigned char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n && !ended_) {
      if (z_.avail_in == 0) {
        z_.avail_in = static_cast<uInt>(src_(in_, sizeof in_));
        z_.next_in = in_;
      }
      const std::size_t want = std::min<std::size_t>(n - got, 1u << 30);
      z_.next_out = out + got;
      z_.avail_out = static_cast<uInt>(want);
      const bool noInput = z_.avail_in == 0;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      got += want - z_.avail_out;
      if (rc == Z_STREAM_END) ended_ = true;
      else if (rc != Z_OK && rc != Z_BUF_ERROR)
        refuse(name_, std::string("is not a valid gzip stream (") + (z_.msg ? z_.msg : "corrupt") + ")");
      else if (noInput && want == z_.avail_out) refuse(name_, "gzip stream is cut short (truncated)");
    }
    return got;
  }
  // After the end of the stream: no bytes left behind it (a second member, or garbage).
  void expectNothingAfter() {
    unsigned char b;
    if (z_.avail_in != 0 || src_(&b, 1) != 0) refuse(name_, "has data after the end of its gzip stream");
  }

 private:
  Source src_;
  std::string name_;
  z_stream z_{};
  unsigned char in_[1 << 16];
  bool ended_ = false;
};
#endif  // TPB_NO_ZLIB

// Labels below the class count: a label of 10 would index past the MLP's 10 outputs.
void checkLabels(const IdxData& d, const std::string& name) {
  for (std::size_t i = 0; i < d.body.size(); ++i)
    if (d.body[i] >= kMnistClasses)
      refuse(name, "has label " + std::to_string(d.body[i]) + " at index " + std::to_string(i) + " (expected 0..9)");
}

IdxData decodePlain(const Source& src, std::uint64_t size, IdxKind kind, const std::string& name) {
  IdxData d;
  unsigned char h[16];
  const std::size_t hs = headerSize(kind);
  if (size < hs || src(h, hs) != hs)
    refuse(name, "is too short for an IDX header (" + std::to_string(size) + " bytes)");
  const std::uint64_t body = bodySize(h, kind, name, d.count);
  // The length is known before anything is allocated: a header promising more is refused here.
  if (size != hs + body)
    refuse(name, "is " + std::to_string(size) + " bytes, expected " + std::to_string(hs + body) + " for " +
                     countText(d.count, kind) + " (truncated or corrupt)");
  d.body.resize(static_cast<std::size_t>(body));
  if (src(d.body.data(), d.body.size()) != body) refuse(name, "changed while being read");
  return d;
}

#ifndef TPB_NO_ZLIB
// Deflate inflates at most 1032 times (its longest match per bit); a header promising more than
// that from `size` compressed bytes is a truncated file, refused before its body is allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

IdxData decodeGzip(const Source& src, std::uint64_t size, IdxKind kind, const std::string& name) {
  GzStream gz(src, name);
  IdxData d;
  unsigned char h[16];
  const std::size_t hs = headerSize(kind);
  if (gz.read(h, hs) != hs) refuse(name, "inflates to less than an IDX header");
  const std::uint64_t body = bodySize(h, kind, name, d.count);
  const std::uint64_t whole = hs + body;
  if (whole / kMaxDeflateRatio > size)
    refuse(name, "claims " + countText(d.count, kind) + " (" + std::to_string(whole) + " bytes), more than " +
                     std::to_string(size) + " gzipped bytes can hold (truncated or corrupt)");
  d.body.resize(static_cast<std::size_t>(body));
  const std::size_t got = gz.read(d.body.data(), d.body.size());
  if (got != body)
    refuse(name, "inflates to " + std::to_string(hs + got) + " bytes, expected " + std::to_string(whole) + " for " +
                     countText(d.count, kind) + " (truncated or corrupt)");
  // One byte past what the header promised is enough to refuse: the rest is never inflated.
  unsigned char extra;
  if (gz.read(&extra, 1) != 0)
    refuse(name, "inflates to more than the " + std::to_string(whole) + " bytes its header gives " +
                     countText(d.count, kind) + " (refused without inflating the rest)");
  gz.expectNothingAfter();
  return d;
}
#else
// Built without zlib (CMake found none): a gzipped file is refused by name, never read as plain IDX.
IdxData decodeGzip(const Source&, std::uint64_t, IdxKind, const std::string& name) {
  refuse(name, "is gzipped, and this tpbench was built without zlib: gunzip it, or install zlib (Debian: "
               "zlib1g-dev) and rebuild");
}
#endif

IdxData decode(const Source& src, std::uint64_t size, bool gzipped, IdxKind kind, const std::string& name) {
  IdxData d = gzipped ? decodeGzip(src, size, kind, name) : decodePlain(src, size, kind, name);
  if (kind == IdxKind::Labels) checkLabels(d, name);
  return d;
}

bool gzipMagic(const unsigned char* p, std::size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

}  // namespace

std::string mnistFilePath(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path plain = fs::path(dir) / name;
  const fs::path gz = fs::path(dir) / (name + ".gz");
  std::error_code ec;
  if (fs::is_regular_file(plain, ec)) return plain.string();
  if (fs::is_regular_file(gz, ec)) return gz.string();
  return "";
}

IdxData decodeMnistIdx(const unsigned char* data, std::size_t size, IdxKind kind, const std::string& name) {
  std::size_t at = 0;
  const Source src = [&](unsigned char* out, std::size_t n) {
    const std::size_t k = std::min(n, size - at);
    if (k) std::memcpy(out, data + at, k);
    at += k;
    return k;
  };
  return decode(src, size, gzipMagic(data, size), kind, name);
}

IdxData readMnistIdx(const std::string& path, IdxKind kind) {
  const RegularFile f("--dataset", path);
  unsigned char magic[2];
  const bool gzipped = gzipMagic(magic, f.readAt(0, magic, 2));
  std::uint64_t at = 0;
  const Source src = [&](unsigned char* out, std::size_t n) {
    const std::size_t k = f.readAt(at, out, n);
    at += k;
    return k;
  };
  return decode(src, f.size(), gzipped, kind, path);
}

MnistPair readMnistPair(const std::string& dir, const std::string& prefix) {
  MnistPair p;
  for (auto* file : {&p.imagesPath, &p.labelsPath}) {
    const std::string name = prefix + (file == &p.imagesPath ? "-images-idx3-ubyte" : "-labels-idx1-ubyte");
    *file = mnistFilePath(dir, name);
    if (file->empty()) {
      const std::string plain = (std::filesystem::path(dir) / name).string();
      TPB_THROW(UsageError, "--dataset: neither " << plain << " nor " << plain << ".gz is a regular file");
    }
  }
  p.images = readMnistIdx(p.imagesPath, IdxKind::Images);
  p.labels = readMnistIdx(p.labelsPath, IdxKind::Labels);
  if (p.images.count != p.labels.count)
    TPB_THROW(UsageError, "--dataset: " << p.labelsPath << " has " << p.labels.count << " labels but " << p.imagesPath
                                        << " has " << p.images.count << " images");
  return p;
}

}  // namespace tpb
