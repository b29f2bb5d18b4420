// tests/writer_reader_property_test.cc — one rule for every results file tpbench writes: what
// ResultsFile::save() writes, ResultsFile::load() reads back. Random records, their numbers drawn
// from the ordinary and from the edges (0, negative, huge, 1e-300, infinite, NaN), go through
// save(): it either writes a file that load() reads, point for point, or refuses (UsageError,
// naming the file) and writes nothing. Before save() read its text back, an infinite bandwidth
// (which JSON writes as null) or a time past the readers' bound was written and then refused by
// every reader (report, compare, model, history).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "record/results.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

double edgy(std::mt19937_64& rng, double typical) {
  static const double edges[] = {0.0, -1.0, 1e-300, 1e300, std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(), 1e18, -1e-9};
  std::uniform_int_distribution<int> pick(0, 9);
  const int k = pick(rng);
  if (k < 8 && std::uniform_int_distribution<int>(0, 3)(rng) == 0) return edges[k];
  return typical * std::uniform_real_distribution<double>(0.5, 2.0)(rng);
}

CollectiveRecord randomCollective(std::mt19937_64& rng) {
  CollectiveRecord c;
  c.op = "allreduce";
  c.algo = "ring";
  c.transport = "shm";
  c.device = "cpu";
  c.nGpus = std::uniform_int_distribution<int>(1, 8)(rng);
  c.count = 1 << std::uniform_int_distribution<int>(0, 20)(rng);
  c.bytes = c.count * 4;
  c.iters = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? -5 : 10;
  c.warmup = 2;
  c.measured = true;
  c.timeMedianUs = edgy(rng, 100);
  c.timeMinUs = edgy(rng, 80);
  c.timeMaxUs = edgy(rng, 130);
  c.algbwGbps = edgy(rng, 5);
  c.busbwGbps = edgy(rng, 7);
  c.status = "ok";
  return c;
}

RunRecord randomRun(std::mt19937_64& rng) {
  RunRecord r;
  r.config.strategy = "ddp";
  r.config.nGpus = 2;
  r.config.batchSize = 32;
  r.config.epochs = 1;
  r.config.trainSize = 1024;
  r.status = "ok";
  EpochRecord e;
  e.wallS = edgy(rng, 1);
  e.computeS = edgy(rng, 0.6);
  e.commS = edgy(rng, 0.3);
  e.samplesPerS = edgy(rng, 1000);
  e.trainLoss = edgy(rng, 0.5);
  e.testAccuracy = edgy(rng, 0.9);
  e.steps = 16;
  e.samples = 1024;
  r.epochs.push_back(e);
  r.summary.totalS = e.wallS;
  r.summary.samplesPerS = e.samplesPerS;
  r.summary.finalTestAccuracy = e.testAccuracy;
  r.summary.finalTrainLoss = e.trainLoss;
  return r;
}

TEST(WriterReader, WhatSaveWritesLoadReadsOrSaveRefusesAndWritesNothing) {
  std::mt19937_64 rng(20261207);
  const std::string path = test::tempPath("writer_reader.json");
  int written = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::filesystem::remove(path);
    ResultsFile f = ResultsFile::create(path, Meta{});
    const bool run = trial % 2 == 0;
    if (run) f.addRun(randomRun(rng));
    else f.addCollective(randomCollective(rng));
    try {
      f.save();
    } catch (const UsageError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_FALSE(std::filesystem::exists(path)) << "a refused save wrote " << path;
      continue;
    }
    ++written;
    try {
      const ResultsFile back = ResultsFile::load(path);
      EXPECT_EQ(back.runs().size(), run ? 1u : 0u);
      EXPECT_EQ(back.collectives().size(), run ? 0u : 1u);
    } catch (const UsageError& e) {
      ADD_FAILURE() << "save() wrote a file load() refuses: " << e.what();
    }
  }
  // Both sides of the rule were exercised.
  EXPECT_GT(written, 50);
  EXPECT_GT(refused, 50);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tpb
