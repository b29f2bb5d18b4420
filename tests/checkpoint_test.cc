// Checkpoints (workload/checkpoint.h): for every registered strategy, a run resumed from the
// checkpoint after epoch 1 ends with the uninterrupted run's weights, loss and accuracy; the file
// loads in PyTorch as an nn.Sequential state_dict and an SGD state_dict; truncated, foreign or
// other-settings files are one-line usage errors naming the file.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"
#include "tests/train_util.h"
#include "workload/checkpoint.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::vector<std::vector<float>> params;
  std::vector<EpochStats> epochs;  // rank 0's
};

Outcome train(const TrainConfig& cfg) {
  const TrainStrategy& s = findStrategy("--strategy", cfg.strategy);
  Outcome o;
  o.params.resize(s.processes(cfg.nGpus));
  test::runThreads("shm", s.processes(cfg.nGpus), [&](CommContext& ctx) {
    auto r = s.run(ctx, cfg, [&](const EpochStats& e) { o.epochs.push_back(e); });
    o.params[ctx.rank()] = r.params;
  });
  return o;
}

// Two short epochs with momentum and evaluation, at the smallest N > 1 the strategy runs (1 for
// `single`).
TrainConfig twoEpochs(const std::string& strategy) {
  const TrainStrategy& s = findStrategy("--strategy", strategy);
  const int n = s.unsupported(Device::Cpu, 2).empty() ? 2 : 1;
  TrainConfig c = test::smallTrainConfig(strategy, n, 16);
  c.epochs = 2;
  c.trainSize = 384;
  c.maxSteps = -1;
  c.evaluate = true;
  c.testSize = 200;
  return c;
}

class ResumeEveryStrategy : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(ResumeEveryStrategy, EndsAsTheUninterruptedRun) {
  const fs::path dir = test::makeTempDir("tpb_ckpt");
  ASSERT_FALSE(dir.empty());
  TrainConfig whole = twoEpochs(GetParam());
  whole.saveDir = dir.string();
  // Strategies that keep no tpbench checkpoints say so through the registry (PyTorch's references).
  const TrainStrategy& s = findStrategy("--strategy", GetParam());
  if (const std::string why = s.unsupported(Device::Cpu, whole.nGpus); !why.empty())
    GTEST_SKIP() << GetParam() << " cannot run here: " << why;
  if (const std::string why = s.unsupportedConfig(whole); !why.empty()) {
    EXPECT_EQ(s.origin, Origin::PyTorchReference) << "only PyTorch's references may refuse checkpoints: " << why;
    GTEST_SKIP() << GetParam() << " keeps no checkpoints: " << why;
  }
  const Outcome a = train(whole);
  ASSERT_EQ(a.epochs.size(), 2u);
  const std::string after1 = checkpointPath(dir.string(), whole, 1);
  ASSERT_TRUE(fs::exists(after1));
  ASSERT_TRUE(fs::exists(checkpointPath(dir.string(), whole, 2)));

  TrainConfig resumed = twoEpochs(GetParam());
  resumed.resumeFrom = after1;
  const Outcome b = train(resumed);
  ASSERT_EQ(b.epochs.size(), 1u) << "the resumed run trains epoch 2 only";
  EXPECT_EQ(b.epochs[0].epoch, 2);
  EXPECT_GT(b.epochs[0].steps, 0);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t r = 0; r < a.params.size(); ++r) EXPECT_EQ(a.params[r], b.params[r]) << "rank " << r;
  EXPECT_EQ(a.epochs[1].trainLoss, b.epochs[0].trainLoss);
  EXPECT_EQ(a.epochs[1].testAccuracy, b.epochs[0].testAccuracy);

  // Resuming from the start's weights would not match: the checkpoint carries epoch 1's state.
  const Checkpoint ck = loadCheckpoint(after1, whole);
  EXPECT_EQ(ck.epoch, 1);
  EXPECT_NE(ck.state.weights, a.params[0]);
  EXPECT_EQ(ck.state.velocity.size(), ck.state.weights.size());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Registry, ResumeEveryStrategy, testing::ValuesIn(strategyNames()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

class CheckpointFile : public testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    dir_ = test::makeTempDir("tpb_ckpt_file");
    ASSERT_FALSE(dir_.empty());
    cfg_ = test::smallTrainConfig("single", 1, 16);
    cfg_.saveDir = dir_.string();
    train(cfg_);
    path_ = checkpointPath(dir_.string(), cfg_, 1);
    ASSERT_TRUE(fs::exists(path_));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  TrainConfig cfg_;
  std::string path_;
};

std::string usageErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST_F(CheckpointFile, TruncatedForeignOrOtherSettingsAreRefused) {
  const std::string full = test::readText(path_);
  const std::string cut = (dir_ / "cut.pt").string(), foreign = (dir_ / "foreign.pt").string();
  test::writeText(cut, full.substr(0, full.size() / 2));
  test::writeText(foreign, "hello\n");
  for (const std::string& p : {cut, foreign}) {
    const std::string why = usageErrorOf([&] { loadCheckpoint(p, cfg_); });
    EXPECT_NE(why.find("--resume_from " + p + ": not a zip archive"), std::string::npos) << why;
  }
  TrainConfig other = cfg_;
  other.hidden = "256";
  const std::string why = usageErrorOf([&] { loadCheckpoint(path_, other); });
  EXPECT_NE(why.find(path_ + ": written with --hidden 512,512, this run has --hidden 256"), std::string::npos) << why;
  other = cfg_;
  other.lr = 0.1;
  EXPECT_NE(usageErrorOf([&] { loadCheckpoint(path_, other); }).find("--lr"), std::string::npos);
  EXPECT_EQ(loadCheckpoint(path_, cfg_).epoch, 1);
}

TEST_F(CheckpointFile, RefusedUpFrontByTheCli) {
  const std::string cut = (dir_ / "cut.pt").string();
  test::writeText(cut, test::readText(path_).substr(0, 100));
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--resume_from", cut}), cut);
  test::expectRefusedUpFront(
      // Every setting as the checkpoint's (smallTrainConfig's) but --hidden, the one named.
      test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "16", "--train_size", "4096",
                    "--lr", "0.05", "--momentum", "0.5", "--seed", "7", "--hidden", "64", "--resume_from", path_}),
      "--hidden 512,512, this run has --hidden 64");
}

// A number in a mismatch reads as the user typed it, not as the 17 digits the file holds.
TEST_F(CheckpointFile, MismatchedNumbersReadAsTyped) {
  const auto r = test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "16", "--train_size",
                               "4096", "--lr", "0.05", "--momentum", "0.9", "--seed", "7", "--resume_from", path_});
  test::expectRefusedUpFront(r, "written with --momentum 0.5, this run has --momentum 0.9");
  EXPECT_EQ(r.err.find("0.90000000000000002"), std::string::npos) << r.err;
}

// A checkpoint after the last epoch (or at --max_steps) leaves nothing to train: said up front,
// with what would train on; given more epochs, the run goes on from it.
TEST_F(CheckpointFile, NothingLeftToTrainIsSaidPlainly) {
  const std::vector<std::string> same = {"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "16",
                                         "--train_size", "4096", "--lr", "0.05", "--momentum", "0.5", "--seed", "7",
                                         "--test_size", "100", "--resume_from", path_};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = same;
    a.insert(a.end(), extra.begin(), extra.end());
    return test::runCli(a);
  };
  test::expectRefusedUpFront(with({"--epochs", "1"}),
                             "nothing left to train: the checkpoint was written after epoch 1 and --epochs is 1 "
                             "(give --epochs 2 or more to train on)");
  test::expectRefusedUpFront(with({"--epochs", "2", "--max_steps", "6"}),
                             "nothing left to train: the checkpoint was written after 6 steps and --max_steps is 6");
  const auto more = with({"--epochs", "2", "--max_steps", "10"});
  EXPECT_EQ(more.exitCode, 0) << more.err;
  EXPECT_NE(more.out.find("epoch 2/2"), std::string::npos) << more.out;
}

// Debian's python3-torch (1.13) reads the file: torch.load gives the dict, nn.Sequential takes
// the model part strictly, torch.optim.SGD takes the optimizer part, and the values are ours.
TEST_F(CheckpointFile, LoadsInPyTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian's python3-torch is not installed)";
  const Checkpoint ck = loadCheckpoint(path_, cfg_);
  double sum = 0, vsum = 0;
  for (float w : ck.state.weights) sum += w;
  for (float v : ck.state.velocity) vsum += v;
  const fs::path script = dir_ / "load.py";
  test::writeText(script.string(),
                  "import sys, torch\n"
                  "ck = torch.load(sys.argv[1])\n"
                  "m = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),\n"
                  "                        torch.nn.ReLU(), torch.nn.Linear(512, 10))\n"
                  "m.load_state_dict(ck['model'], strict=True)\n"
                  "opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.5)\n"
                  "opt.load_state_dict(ck['optimizer'])\n"
                  "w = sum(float(p.double().sum()) for p in m.parameters())\n"
                  "v = sum(float(opt.state[p]['momentum_buffer'].double().sum()) for p in m.parameters())\n"
                  "print(ck['format'], ck['epoch'], ck['steps'], ck['sampler']['seed'], ck['config']['hidden'])\n"
                  "print('%.6f %.6f' % (w, v))\n");
  const fs::path out = dir_ / "out.txt";
  const std::string cmd = "/usr/bin/python3 " + script.string() + " " + path_ + " > " + out.string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::readText(out);
  char expect[200];
  std::snprintf(expect, sizeof expect, "tpbench.checkpoint/1 1 6 7 512,512\n%.6f %.6f\n", sum, vsum);
  EXPECT_EQ(test::readText(out), expect);
}

}  // namespace
}  // namespace tpb
