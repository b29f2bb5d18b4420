// ddp's bucket rule (core/ddp_buckets.h) against hand-worked cases and against PyTorch's own
// dist._compute_bucket_assignment_by_size, run on the same sizes in Debian's python3-torch.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/ddp_buckets.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The default MLP 784-512-512-10: fc0.weight, fc0.bias, fc1.weight, fc1.bias, fc2.weight, fc2.bias.
std::vector<double> mlpBytes() { return {4.0 * 784 * 512, 4.0 * 512, 4.0 * 512 * 512, 4.0 * 512, 4.0 * 5120, 4.0 * 10}; }

TEST(DdpBuckets, TheFirstBucketClosesAtOneMiBWhateverTheCap) {
  // From the end: fc2.bias, fc2.weight, fc1.bias, then fc1.weight brings 22 KB to 1.07 MB >= 1 MiB.
  for (double cap : {0.25, 1.0, 25.0}) EXPECT_EQ(ddpBucketFirsts(mlpBytes(), cap * kMiB), (std::vector<std::size_t>{2, 0})) << cap;
  // A first limit above the model: one bucket.
  EXPECT_EQ(ddpBucketFirsts(mlpBytes(), kMiB, 100 * kMiB), (std::vector<std::size_t>{0}));
}

TEST(DdpBuckets, LaterBucketsCloseOnceTheyHoldTheCap) {
  // Ten 0.4 MiB parameters: 1 MiB needs three (1.2 MiB); a 1 MiB cap then three each, the last
  // bucket what is left.
  const std::vector<double> bytes(10, 0.4 * kMiB);
  EXPECT_EQ(ddpBucketFirsts(bytes, 1.0 * kMiB), (std::vector<std::size_t>{7, 4, 1, 0}));
  // A cap below one parameter: one parameter per bucket after the first.
  EXPECT_EQ(ddpBucketFirsts(bytes, 0.1 * kMiB), (std::vector<std::size_t>{7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_TRUE(ddpBucketFirsts({}, kMiB).empty());
}

struct Case {
  std::vector<double> bytes;
  double cap;
};

// PyTorch's assignment of each case's tensors (float32, given in backward order as the Reducer's
// rebuild sees them), as our firsts, one line per case, from one python3 process; empty when
// python3 cannot import torch.distributed.
std::vector<std::string> pytorchFirsts(const std::vector<Case>& cases) {
  std::ostringstream script;
  script << "import torch, torch.distributed as dist\ncases = [\n";
  for (const Case& c : cases) {
    script << "  ([";
    for (double b : c.bytes) script << static_cast<long long>(b / 4) << ",";
    script << "], " << static_cast<long long>(c.cap) << "),\n";
  }
  script << "]\nfor sizes, cap in cases:\n"
            "  rev = [torch.empty(n) for n in reversed(sizes)]\n"
            "  buckets, _ = dist._compute_bucket_assignment_by_size(rev, [1 << 20, cap], [False] * len(rev))\n"
            "  print(' '.join(str(len(sizes) - 1 - max(b)) for b in buckets))\n";
  const auto r = test::runProgram("/usr/bin/python3", {"-c", script.str()});
  std::vector<std::string> lines;
  if (r.exitCode != 0) return lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(DdpBuckets, AgreeWithPyTorchsAssignment) {
  // The MLP, a GPT-2-small-like layer list (embeddings, then per layer: ln, qkv, proj, ln, fc,
  // proj), and ResNet-like conv weights with their norms, at caps around their sizes.
  std::vector<double> gpt{4.0 * 50257 * 768, 4.0 * 1024 * 768};
  for (int l = 0; l < 4; ++l)
    for (double n : {768.0, 768.0, 768.0 * 2304, 2304.0, 768.0 * 768, 768.0, 768.0, 768.0, 768.0 * 3072, 3072.0,
                     3072.0 * 768, 768.0})
      gpt.push_back(4 * n);
  std::vector<double> cnn;
  for (int c : {64, 64, 128, 128, 256, 256, 512, 512})
    for (double n : {9.0 * c * c, 1.0 * c, 1.0 * c}) cnn.push_back(4 * n);
  std::vector<Case> cases;
  for (const auto& bytes : {mlpBytes(), gpt, cnn})
    for (double capMb : {0.5, 1.0, 5.0, 25.0}) cases.push_back({bytes, capMb * kMiB});
  const std::vector<std::string> theirs = pytorchFirsts(cases);
  if (theirs.empty()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed";
  ASSERT_EQ(theirs.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::ostringstream ours;
    for (std::size_t f : ddpBucketFirsts(cases[i].bytes, cases[i].cap)) ours << (ours.tellp() > 0 ? " " : "") << f;
    EXPECT_EQ(ours.str(), theirs[i]) << cases[i].bytes.size() << " parameters at " << cases[i].cap / kMiB << " MiB";
  }
}

}  // namespace
}  // namespace tpb
