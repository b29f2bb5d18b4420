// A file that starts with gzip's magic is never read as plain IDX. With zlib it is inflated (this
// one, not a valid stream, is refused as such); in a build without zlib (CMake found none, and
// tests/CMakeLists.txt defines TPB_NO_ZLIB here) it is refused by name, saying why.
#include <gtest/gtest.h>

#include "tests/file_util.h"
#include "workload/idx.h"

namespace tpb {
namespace {

TEST(IdxGzip, GzipMagicIsInflatedOrRefusedNamingZlib) {
  const unsigned char bytes[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03, 0xff, 0xff, 0xff, 0xff};
  const auto decode = [&] { decodeMnistIdx(bytes, sizeof bytes, IdxKind::Labels, "t10k-labels-idx1-ubyte.gz"); };
#ifdef TPB_NO_ZLIB
  test::expectUsageError(decode, {"--dataset t10k-labels-idx1-ubyte.gz: is gzipped", "without zlib", "zlib1g-dev"});
#else
  const std::string msg = test::usageErrorOf(decode);
  EXPECT_NE(msg.find("--dataset t10k-labels-idx1-ubyte.gz: is not a valid gzip stream"), std::string::npos) << msg;
#endif
}

}  // namespace
}  // namespace tpb
