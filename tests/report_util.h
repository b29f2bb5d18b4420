// tests/report_util.h — what the report tests share: the fixture, whether gnuplot can be run,
// and a fresh temporary directory (as a test fixture: TempDirTest).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#ifndef TPB_SOURCE_DIR
#error "tests/CMakeLists.txt must define TPB_SOURCE_DIR (the source tree, to find tests/fixtures)"
#endif

namespace tpb::test {

// A small but realistic results file on which every chart is drawn.
inline const std::string kReportFixture =
    std::string(TPB_SOURCE_DIR) + "/tests/fixtures/report_small.json";
// A real trace (`tpbench sweep --strategies ddp,ring_all_reduce,pipeline --n_gpus 2 --batch_size 64
// --epochs 1 --train_size 384 --test_size 100 --hidden 256,256,256 --bucket_mb 0.25 --trace`):
// 3 steps of each, ddp with several buckets, the pipeline with 4 micro-batches.
inline const std::string kTraceFixture =
    std::string(TPB_SOURCE_DIR) + "/tests/fixtures/report_small.trace.json";

inline bool gnuplotAvailable() { return std::system("gnuplot -e 'exit' >/dev/null 2>&1") == 0; }

// A new empty directory under the test temp dir, named <stem>.XXXXXX; "" when it cannot be made.
inline std::filesystem::path makeTempDir(const std::string& stem) {
  std::string templ = (std::filesystem::path(::testing::TempDir()) / (stem + ".XXXXXX")).string();
  return ::mkdtemp(templ.data()) ? std::filesystem::path(templ) : std::filesystem::path();
}

// A test with a fresh temporary directory, dir_, removed after it.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string stem) : stem_(std::move(stem)) {}
  void SetUp() override {
    dir_ = makeTempDir(stem_);
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;

 private:
  std::string stem_;
};

}  // namespace tpb::test
