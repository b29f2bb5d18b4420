// What a rank says of the exception that ended it: LibTorch's own errors, raised for real here,
// on one line without their C++ stack dump.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "worker/error_text.h"

namespace tpb {
namespace {

TEST(RankErrorText, AnAllocationLibTorchCannotMakeIsOneLineWithItsSize) {
  std::string said;
  try {
    // 2^48 floats, 1 PiB: no machine's allocator gives it.
    const torch::Tensor t = torch::empty({std::int64_t{1} << 48}, torch::kFloat);
    FAIL() << "allocated " << t.numel() << " floats";
  } catch (const std::exception& e) {
    const std::string raw = e.what();
    said = rankErrorText(e);
    // What the old rank printed: LibTorch's message and then its frames.
    EXPECT_NE(raw.find("frame #"), std::string::npos) << raw;
  }
  EXPECT_EQ(said.rfind("out of memory: LibTorch could not allocate 1048576.0 GiB (", 0), 0u) << said;
  EXPECT_NE(said.find("1125899906842624 bytes"), std::string::npos) << said;
  EXPECT_EQ(said.find("frame #"), std::string::npos) << said;
  EXPECT_EQ(said.find('\n'), std::string::npos) << said;
}

TEST(RankErrorText, OtherErrorsKeepTheirMessageOnOneLine) {
  try {
    TORCH_CHECK(false, "shapes do not match: ", 3, " vs ", 4);
  } catch (const std::exception& e) {
    const std::string said = rankErrorText(e);
    EXPECT_NE(said.find("shapes do not match: 3 vs 4"), std::string::npos) << said;
    EXPECT_EQ(said.find("frame #"), std::string::npos) << said;
    EXPECT_EQ(said.find("Exception raised from"), std::string::npos) << said;
    EXPECT_EQ(said.find('\n'), std::string::npos) << said;
  }
  EXPECT_EQ(rankErrorText(std::runtime_error("two\nlines")), "two lines");
  EXPECT_EQ(rankErrorText(std::string("a rank exited")), "a rank exited");
}

}  // namespace
}  // namespace tpb
