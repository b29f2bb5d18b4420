// Checkpoints (workload/checkpoint.h): for every registered strategy, a run resumed from the
// checkpoint after epoch 1 ends with the uninterrupted run's weights, loss and accuracy; the file
// loads in PyTorch as an nn.Sequential state_dict and an SGD state_dict; truncated, foreign or
// other-settings files are one-line usage errors naming the file.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

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

// Runs `cfg` for two epochs writing checkpoints, then again resumed from the one after epoch 1:
// both must end with the same weights, loss and accuracy to the bit (the same operations on the
// same values, one thread), and write the same checkpoint after epoch 2: weights, momentum and
// buffers (BatchNorm's running statistics, which no parameter shows).
void expectResumeIsExact(const TrainConfig& cfg) {
  const fs::path dir = test::makeTempDir("tpb_ckpt"), again = test::makeTempDir("tpb_ckpt_resumed");
  ASSERT_FALSE(dir.empty() || again.empty());
  TrainConfig whole = cfg;
  whole.saveDir = dir.string();
  const TrainStrategy& s = findStrategy("--strategy", cfg.strategy);
  if (const std::string why = s.unsupported(Device::Cpu, whole.nGpus); !why.empty())
    GTEST_SKIP() << cfg.strategy << " cannot run here: " << why;
  // Strategies that keep no tpbench checkpoints say so through the registry (PyTorch's
  // references), as do those that train the MLP only (model_parallel, pipeline).
  if (const std::string why = s.unsupportedConfig(whole); !why.empty()) {
    EXPECT_TRUE(s.origin == Origin::PyTorchReference || why.find("--workload " + cfg.workload) != std::string::npos)
        << "only PyTorch's references may refuse checkpoints: " << why;
    GTEST_SKIP() << cfg.strategy << " keeps no checkpoints of " << cfg.workload << ": " << why;
  }
  const Outcome a = train(whole);
  ASSERT_EQ(a.epochs.size(), 2u);
  const std::string after1 = checkpointPath(dir.string(), whole, 1), after2 = checkpointPath(dir.string(), whole, 2);
  ASSERT_TRUE(fs::exists(after1));
  ASSERT_TRUE(fs::exists(after2));

  TrainConfig resumed = cfg;
  resumed.resumeFrom = after1;
  resumed.saveDir = again.string();
  const Outcome b = train(resumed);
  ASSERT_EQ(b.epochs.size(), 1u) << "the resumed run trains epoch 2 only";
  EXPECT_EQ(b.epochs[0].epoch, 2);
  EXPECT_GT(b.epochs[0].steps, 0);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t r = 0; r < a.params.size(); ++r) EXPECT_EQ(a.params[r], b.params[r]) << "rank " << r;
  EXPECT_EQ(a.epochs[1].trainLoss, b.epochs[0].trainLoss);
  EXPECT_EQ(a.epochs[1].testAccuracy, b.epochs[0].testAccuracy);
  const Checkpoint end = loadCheckpoint(after2, cfg);
  const Checkpoint endResumed = loadCheckpoint(checkpointPath(again.string(), cfg, 2), cfg);
  EXPECT_EQ(end.state.velocity, endResumed.state.velocity);
  ASSERT_EQ(end.state.buffers.size(), endResumed.state.buffers.size());
  for (std::size_t i = 0; i < end.state.buffers.size(); ++i)
    EXPECT_TRUE(torch::equal(end.state.buffers[i], endResumed.state.buffers[i])) << "buffer " << i;

  // Resuming from the start's weights would not match: the checkpoint carries epoch 1's state.
  const Checkpoint ck = loadCheckpoint(after1, whole);
  EXPECT_EQ(ck.epoch, 1);
  EXPECT_NE(ck.state.weights, a.params[0]);
  EXPECT_EQ(ck.state.velocity.size(), ck.state.weights.size());
  fs::remove_all(dir);
  fs::remove_all(again);
}

class ResumeEveryStrategy : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(ResumeEveryStrategy, EndsAsTheUninterruptedRun) { expectResumeIsExact(twoEpochs(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Registry, ResumeEveryStrategy, testing::ValuesIn(strategyNames()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// Small networks of each kind with buffers or without: a ResNet with BatchNorm (running
// statistics to carry over), a GPT with its tied LM head.
const char* const kResnet = "resnet:depth=10:width=4:image=mnist:norm=batch";
const char* const kGpt = "gpt:layers=1:hidden=16:heads=2:ffn=32:vocab=64:seq=8";

struct NetworkCase {
  std::string strategy, workload;
};

class ResumeNetworks : public testing::TestWithParam<NetworkCase> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(ResumeNetworks, EndAsTheUninterruptedRun) {
  TrainConfig c = twoEpochs(GetParam().strategy);
  c.workload = GetParam().workload;
  c.trainSize = 128;
  c.testSize = 64;
  expectResumeIsExact(c);
}

std::vector<NetworkCase> networkCases() {
  std::vector<NetworkCase> out;
  for (const std::string& strategy : strategyNames())
    for (const char* w : {kResnet, kGpt}) out.push_back({strategy, w});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, ResumeNetworks, testing::ValuesIn(networkCases()),
                         [](const testing::TestParamInfo<NetworkCase>& i) {
                           return i.param.strategy + "_" + i.param.workload.substr(0, i.param.workload.find(':'));
                         });

// A copy of the checkpoint at `path`, as `to`, with `edit` applied to its dict: what a file that
// claims something else looks like.
std::string editedCopy(const std::string& path, const std::string& to,
                       const std::function<void(c10::impl::GenericDict&)>& edit) {
  const std::string bytes = test::readText(path);
  c10::impl::GenericDict doc = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
  edit(doc);
  const std::vector<char> out = torch::pickle_save(c10::IValue(doc));
  test::writeText(to, std::string(out.begin(), out.end()));
  return to;
}

// Whether Debian's python3-torch (1.13) is there to read a file in PyTorch.
bool havePyTorch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

// What the Python program `code` prints (stdout and stderr) when run with `args` from `dir`; a
// failure when it fails.
std::string pythonOutput(const fs::path& dir, const std::string& code, const std::string& args) {
  const fs::path script = dir / "load.py", out = dir / "out.txt";
  test::writeText(script.string(), code);
  const std::string cmd = "/usr/bin/python3 " + script.string() + " " + args + " > " + out.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << test::readText(out);
  return test::readText(out);
}

class CheckpointFile : public testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    dir_ = test::makeTempDir("tpb_ckpt_file");
    ASSERT_FALSE(dir_.empty());
    cfg_ = test::smallTrainConfig("single", 1, 16);
    cfg_.saveDir = dir_.string();
    configure(cfg_);
    train(cfg_);
    path_ = checkpointPath(dir_.string(), cfg_, 1);
    ASSERT_TRUE(fs::exists(path_));
  }
  void TearDown() override { fs::remove_all(dir_); }
  // What the file's run trains, beyond smallTrainConfig: the MLP here.
  virtual void configure(TrainConfig&) {}
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
  if (!havePyTorch())
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian's python3-torch is not installed)";
  const Checkpoint ck = loadCheckpoint(path_, cfg_);
  double sum = 0, vsum = 0;
  for (float w : ck.state.weights) sum += w;
  for (float v : ck.state.velocity) vsum += v;
  const char* load =
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
      "print('%.6f %.6f' % (w, v))\n";
  const std::string out = pythonOutput(dir_, load, path_);
  char expect[200];
  std::snprintf(expect, sizeof expect, "tpbench.checkpoint/2 1 6 7 512,512\n%.6f %.6f\n", sum, vsum);
  EXPECT_EQ(out, expect);
}

// A file of the first format (the MLP only, no "shapes", and at first no workload among its
// settings) still resumes: its tensors are checked against the run's model as before.
TEST_F(CheckpointFile, VersionOneFilesStillLoad) {
  const std::string v1 = editedCopy(path_, (dir_ / "v1.pt").string(), [](c10::impl::GenericDict& doc) {
    doc.insert_or_assign("format", std::string("tpbench.checkpoint/1"));
    EXPECT_EQ(doc.erase("shapes"), 1u);
    EXPECT_EQ(doc.at("config").toGenericDict().erase("workload"), 1u);
  });
  const Checkpoint ck = loadCheckpoint(v1, cfg_);
  EXPECT_EQ(ck.state.weights, loadCheckpoint(path_, cfg_).state.weights);
  const std::string v3 = editedCopy(path_, (dir_ / "v3.pt").string(), [](c10::impl::GenericDict& doc) {
    doc.insert_or_assign("format", std::string("tpbench.checkpoint/3"));
  });
  EXPECT_NE(usageErrorOf([&] { loadCheckpoint(v3, cfg_); })
                .find(v3 + ": written by a newer tpbench (tpbench.checkpoint/3; this one reads up to /2)"),
            std::string::npos);
}

// A ResNet's checkpoint (BatchNorm: buffers too) after 6 steps, and the settings that resume it.
class NetworkCheckpointFile : public CheckpointFile {
 protected:
  void configure(TrainConfig& c) override {
    c.workload = kResnet;
    c.trainSize = 128;
  }
  std::vector<std::string> flags(const std::string& workload) const {
    return {"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "16", "--train_size", "128", "--lr",
            "0.05", "--momentum", "0.5", "--seed", "7", "--test_size", "32", "--workload", workload,
            "--resume_from", path_};
  }
};

TEST_F(NetworkCheckpointFile, HoldsTheWorkloadShapesAndBuffers) {
  const CheckpointModel m = checkpointModel(cfg_);
  ASSERT_GT(m.layout.size(), m.parameters);
  EXPECT_NE(m.layout[m.parameters].name.find("running_mean"), std::string::npos) << m.layout[m.parameters].name;
  const Checkpoint ck = loadCheckpoint(path_, cfg_);
  EXPECT_EQ(ck.config.at("workload"), kResnet);
  ASSERT_EQ(ck.state.buffers.size(), m.layout.size() - m.parameters);
  // Six steps moved the running mean away from its initial zeros: the file holds the trained ones.
  EXPECT_GT(ck.state.buffers[0].abs().sum().item<double>(), 0.0);
}

TEST_F(NetworkCheckpointFile, AnotherWorkloadIsRefused) {
  TrainConfig other = cfg_;
  other.workload = kGpt;
  const std::string why = usageErrorOf([&] { loadCheckpoint(path_, other); });
  EXPECT_NE(why.find("--resume_from " + path_ + ": written with --workload " + kResnet + ", this run has --workload " +
                     kGpt),
            std::string::npos)
      << why;
  test::expectRefusedUpFront(test::runCli(flags(kGpt)), "written with --workload " + std::string(kResnet) +
                                                            ", this run has --workload " + kGpt);
}

// The same workload with other shapes (what an edited file, or a network built otherwise by
// another build, would hold): the first tensor that differs is named with both shapes.
TEST_F(NetworkCheckpointFile, OtherShapesAreRefused) {
  const ModelLayout run = checkpointModel(cfg_).layout;
  const std::string first = run[0].name, what = std::string("this run's --workload ") + kResnet;
  const std::string resized = editedCopy(path_, (dir_ / "resized.pt").string(), [&](c10::impl::GenericDict& doc) {
    doc.at("shapes").toGenericDict().insert_or_assign(first, c10::List<std::int64_t>({9, 9}));
  });
  EXPECT_NE(usageErrorOf([&] { loadCheckpoint(resized, cfg_); })
                .find(resized + ": its '" + first + "' is 9x9, " + what + " has " + sizesText(run[0].sizes)),
            std::string::npos);
  const std::string shorter = editedCopy(path_, (dir_ / "shorter.pt").string(), [&](c10::impl::GenericDict& doc) {
    EXPECT_EQ(doc.at("shapes").toGenericDict().erase(run.back().name), 1u);
  });
  EXPECT_NE(usageErrorOf([&] { loadCheckpoint(shorter, cfg_); })
                .find(shorter + ": it holds " + std::to_string(run.size() - 1) + " tensors, " + what + " has " +
                      std::to_string(run.size())),
            std::string::npos);
  // "shapes" intact, a tensor of "model" not: the tensor itself is checked too.
  const std::string lying = editedCopy(path_, (dir_ / "lying.pt").string(), [&](c10::impl::GenericDict& doc) {
    doc.at("model").toGenericDict().insert_or_assign(first, torch::zeros({9, 9}));
  });
  EXPECT_NE(usageErrorOf([&] { loadCheckpoint(lying, cfg_); }).find(lying + ": 'model." + first + "' is not a"),
            std::string::npos);
  std::vector<std::string> args = flags(kResnet);
  args.back() = resized;
  test::expectRefusedUpFront(test::runCli(args), "--resume_from " + resized + ": its '" + first + "' is 9x9");
}

TEST_F(NetworkCheckpointFile, ResumesFromTheCli) {
  std::vector<std::string> args = flags(kResnet);
  args.insert(args.end(), {"--epochs", "2", "--max_steps", "10"});
  const auto r = test::runCli(args);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("epoch 2/2"), std::string::npos) << r.out;
}

// PyTorch's rebuild of the network (scripts/torch_ddp.py's make_network) takes the model part
// strictly, buffers included, and SGD the optimizer part; the values are ours.
TEST_F(NetworkCheckpointFile, LoadsIntoPyTorchsRebuild) {
  if (!havePyTorch())
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian's python3-torch is not installed)";
  double sum = 0;
  for (float w : loadCheckpoint(path_, cfg_).state.weights) sum += w;
  const std::string spec = R"({"kind": "resnet", "in_channels": 1, "width": 4, "imagenet_stem": false, )"
                           R"("stage_blocks": [1, 1, 1, 1], "bottleneck": false, "classes": 10, "norm": "batch"})";
  const char* load =
      "import importlib.util, json, sys, torch\n"
      "spec = importlib.util.spec_from_file_location('torch_ddp', sys.argv[1])\n"
      "mod = importlib.util.module_from_spec(spec)\n"
      "spec.loader.exec_module(mod)\n"
      "net = mod.make_network(torch, torch.nn, json.loads(sys.argv[2]))\n"
      "ck = torch.load(sys.argv[3])\n"
      "net.load_state_dict(ck['model'], strict=True)\n"
      "torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.5).load_state_dict(ck['optimizer'])\n"
      "print(ck['format'], ck['config']['workload'], list(ck['shapes'].items())[0])\n"
      "print('%.6f' % sum(float(p.double().sum()) for p in net.parameters()))\n";
  const std::string out =
      pythonOutput(dir_, load, std::string(TPB_SOURCE_DIR) + "/scripts/torch_ddp.py '" + spec + "' " + path_);
  char expect[300];
  std::snprintf(expect, sizeof expect, "tpbench.checkpoint/2 %s ('0.conv1.weight', [4, 1, 3, 3])\n%.6f\n", kResnet,
                sum);
  EXPECT_EQ(out, expect);
}

}  // namespace
}  // namespace tpb
