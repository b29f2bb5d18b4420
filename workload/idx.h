// workload/idx.h — MNIST's IDX files read as untrusted input, LibTorch-free (so the launcher's
// up-front check and the fuzzer share the ranks' reader).
//
// An MNIST file is plain or gzipped (NAME or NAME.gz): images (magic 2051, count, 28, 28, then
// count x 784 pixel bytes) or labels (magic 2049, count, then count bytes in 0..9). The header is
// read first (inflated on its own where gzipped) and fixes the file's exact length; a gzip stream
// is inflated at most that far, so a small bomb costs one header's worth of memory before it is
// refused, never its inflated size. Every refusal is a UsageError naming the flag and the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpb {

enum class IdxKind { Images, Labels };

// The pixels (count x 784 bytes) or labels (count bytes, each below 10) of one checked file.
struct IdxData {
  std::uint32_t count = 0;
  std::vector<unsigned char> body;
};

// One split of MNIST: images and labels of the same count.
struct MnistPair {
  IdxData images, labels;
  std::string imagesPath, labelsPath;
};

constexpr int kMnistSide = 28;
constexpr int kMnistPixels = kMnistSide * kMnistSide;  // what the MLP's input layer takes
constexpr int kMnistClasses = 10;

// DIR/name if that is a regular file, else DIR/name.gz if that one is, else "".
std::string mnistFilePath(const std::string& dir, const std::string& name);

// Checks and decodes the bytes of one file (`name` says which in errors): gzip when they start
// with its magic, else plain. The in-memory entry point, for the fuzzer.
IdxData decodeMnistIdx(const unsigned char* data, std::size_t size, IdxKind kind, const std::string& name);

// Reads `path` (a regular file, opened without blocking on a FIFO) and decodes it.
IdxData readMnistIdx(const std::string& path, IdxKind kind);

// DIR/<prefix>-images-idx3-ubyte and DIR/<prefix>-labels-idx1-ubyte (plain or .gz), checked
// whole and against each other.
MnistPair readMnistPair(const std::string& dir, const std::string& prefix);

}  // namespace tpb
