// Tests for the settings table (common/train_settings.h). Every test walks the table, so a
// setting added there is checked on every path it must travel with no edit here: its flag, the
// checks before launch, the record's JSON and equality, the job a rank reads, the checkpoint's
// check. The first test catches a field added to TrainSettings but not to the table.
#include "common/train_settings.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/cli/train_flags.h"
#include "harness/input_checks.h"
#include "harness/train_runner.h"
#include "record/records.h"
#include "tests/file_util.h"
#include "worker/train_job.h"
#include "workload/checkpoint.h"
#include "workload/train_config.h"

namespace tpb {
namespace {

using test::usageErrorOf;

std::vector<SettingInfo> table() {
  std::vector<SettingInfo> infos;
  const TrainSettings s;
  forEachSetting([&](const SettingInfo& info, const auto&) { infos.push_back(info); }, s);
  return infos;
}

// Another value of the same type, valid where the flags parse it (widths stay widths).
std::string otherValue(const std::string& v) {
  const bool widths = !v.empty() && v.find_first_not_of("0123456789,") == std::string::npos;
  return widths ? v + ",7" : v + "_other";
}
double otherValue(double v) { return v + 0.25; }
template <class Integer>
Integer otherValue(Integer v) {
  return v == static_cast<Integer>(-1) ? 3 : v + 1;
}

// Changes the setting `key` of `s` to another value; returns that value as flag text.
template <class S>
std::string change(S& s, const std::string& key) {
  std::string text;
  forEachSetting(
      [&](const SettingInfo& info, auto& value) {
        if (key != info.key) return;
        value = otherValue(value);
        text = settingText(value);
      },
      static_cast<TrainSettings&>(s));
  return text;
}

// The first setting in which a and b differ ("" when none).
std::string firstDifference(const TrainSettings& a, const TrainSettings& b) {
  std::string key;
  forEachSetting(
      [&](const SettingInfo& info, const auto& x, const auto& y) {
        if (key.empty() && !(x == y)) key = info.key;
      },
      a, b);
  return key;
}

TEST(TrainSettingsTable, EveryFieldOfTheStructIsInTheTable) {
  // The fields the table visits, by place in the struct: between two of them, and after the last,
  // nothing but alignment padding fits, so a member the table does not name would show as a gap.
  const TrainSettings s;
  const char* base = reinterpret_cast<const char*>(&s);
  struct Span {
    std::size_t begin, end, align;
  };
  std::vector<Span> spans;
  forEachSetting(
      [&](const SettingInfo&, const auto& value) {
        const std::size_t at = static_cast<std::size_t>(reinterpret_cast<const char*>(&value) - base);
        spans.push_back({at, at + sizeof(value), alignof(std::decay_t<decltype(value)>)});
      },
      s);
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  ASSERT_FALSE(spans.empty());
  EXPECT_EQ(spans.front().begin, 0u);
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_GE(spans[i].begin, spans[i - 1].end) << "two settings share bytes";
    EXPECT_LT(spans[i].begin - spans[i - 1].end, spans[i].align)
        << "a member of TrainSettings before byte " << spans[i].begin << " is not in forEachSetting";
  }
  EXPECT_LT(sizeof(TrainSettings) - spans.back().end, alignof(TrainSettings))
      << "a member at the end of TrainSettings is not in forEachSetting";
}

TEST(TrainSettingsTable, KeysAreUniqueAndEveryOneHasItsFlag) {
  CLI::App app;
  cli::Action action;
  cli::addRun(app, action, "tpbench run", nullptr);
  cli::addSweep(app, action, "tpbench sweep", nullptr);
  std::set<std::string> keys;
  for (const SettingInfo& info : table()) {
    EXPECT_TRUE(keys.insert(info.key).second) << info.key << " twice";
    if (info.flag == SettingInfo::Flag::Shared) {
      EXPECT_NE(std::string(info.help), "") << info.key;
    }
    const std::string flag = std::string("--") + info.key;
    EXPECT_NE(app.get_subcommand("run")->get_option_no_throw(flag), nullptr) << "run has no " << flag;
    // sweep takes a list of a point's dimension, under the plural where the singular reads wrong
    // (--strategies).
    const CLI::App* sweep = app.get_subcommand("sweep");
    const std::string plural = flag.back() == 'y' ? flag.substr(0, flag.size() - 1) + "ies" : flag + "s";
    EXPECT_TRUE(sweep->get_option_no_throw(flag) || sweep->get_option_no_throw(plural)) << "sweep has no " << flag;
  }
}

TEST(TrainSettingsTable, EachSettingTravelsFromItsFlagToTheRecordAndToTheRanks) {
  for (const SettingInfo& info : table()) {
    SCOPED_TRACE(info.key);
    cli::TrainFlags f;
    TrainConfig want;
    if (info.flag == SettingInfo::Flag::Shared) {
      CLI::App app;
      cli::addTrainFlags(&app, f);
      const std::string text = change(want, info.key);
      app.parse(std::vector<std::string>{text, std::string("--") + info.key});  // reversed: CLI11's order
      want = cli::baseConfig(f);
    } else {
      want = cli::baseConfig(f);
      change(want, info.key);  // run and sweep set the point's dimensions themselves
    }
    EXPECT_EQ(firstDifference(want, TrainConfig()), info.key) << "the flag did not set it";
    // A microbatched strategy's record carries every setting that is set.
    const RunConfig record = RunConfig::make(want, true, "cpu", "shm", 0);
    EXPECT_EQ(firstDifference(record, want), "");
    const nlohmann::json job = record.toJson();
    EXPECT_TRUE(job.contains(info.key)) << job.dump();
    const TrainConfig rank = configFromJob(job, "job.json");
    EXPECT_EQ(firstDifference(rank, want), "") << "the rank did not get it";
    EXPECT_TRUE(RunConfig::fromJson(JsonIn(job, "job.json")) == record);
  }
}

TEST(TrainSettingsTable, EqualityAndTheCheckpointSeeEverySetting) {
  const TrainConfig base;
  const RunConfig a = RunConfig::make(base, true, "cpu", "shm", 0);
  for (const SettingInfo& info : table()) {
    SCOPED_TRACE(info.key);
    TrainConfig other = base;
    change(other, info.key);
    EXPECT_FALSE(RunConfig::make(other, true, "cpu", "shm", 0) == a);
    EXPECT_EQ(checkpointConfig(other) != checkpointConfig(base), info.checkpointed);
  }
}

TEST(TrainSettingsTable, ARunRefusesEachSettingOutsideWhatItAccepts) {
  for (const SettingInfo& info : table()) {
    if (info.check == SettingInfo::Check::Unchecked) continue;
    SCOPED_TRACE(info.key);
    TrainRunOptions o;
    TrainConfig c;
    c.nGpus = 2;
    forEachSetting(
        [&](const SettingInfo& i, auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_arithmetic_v<T>) {
            if (i.key != info.key) return;
            const Bounds& b = i.accepted;
            const double outside = i.check == SettingInfo::Check::StepLimit ? 0 : b.loOpen ? b.lo : b.lo - 1;
            value = static_cast<T>(outside);
          }
        },
        static_cast<TrainSettings&>(c));
    o.points.push_back({c, 0});
    const std::string why = usageErrorOf([&] { checkTrainRun(o); });
    EXPECT_NE(why.find(std::string("] --") + info.key + ": "), std::string::npos) << why;
  }
}

// What a run accepts, a results file may hold: else a run writes a record its own reader refuses
// (--bucket_mb 2e9 did). A bound is the field type's limit where the table leaves it open, and a
// real is finite whatever its bound says.
TEST(TrainSettingsTable, EveryValueARunAcceptsAResultsFileMayHold) {
  TrainSettings s;
  forEachSetting(
      [&](const SettingInfo& info, const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_arithmetic_v<T>) {
          if (info.check != SettingInfo::Check::Integer && info.check != SettingInfo::Check::Real) return;
          const double typeMax = static_cast<double>(std::numeric_limits<T>::max());
          const double typeLow = static_cast<double>(std::numeric_limits<T>::lowest());
          const double hi = std::min(info.accepted.hi, typeMax), lo = std::max(info.accepted.lo, typeLow);
          EXPECT_LE(hi, info.inFile.hi) << info.key;
          EXPECT_GE(lo, info.inFile.lo) << info.key;
          EXPECT_TRUE(info.inFile.contains(hi) || (info.accepted.hiOpen && hi < info.inFile.hi)) << info.key;
          EXPECT_TRUE(info.inFile.contains(lo) || (info.accepted.loOpen && lo >= info.inFile.lo)) << info.key;
        }
      },
      s);
}

TEST(TrainSettingsTable, ARecordLacksOnlyWhatTheTableAllows) {
  const nlohmann::json full = RunConfig::make(TrainConfig(), true, "cpu", "shm", 0).toJson();
  for (const SettingInfo& info : table()) {
    SCOPED_TRACE(info.key);
    nlohmann::json lacking = full;
    lacking.erase(info.key);
    if (info.absent == SettingInfo::Absent::Required) {
      EXPECT_NE(usageErrorOf([&] { RunConfig::fromJson(JsonIn(lacking, "f.json")); }).find(info.key),
                std::string::npos);
      continue;
    }
    const RunConfig read = RunConfig::fromJson(JsonIn(lacking, "f.json"));
    EXPECT_EQ(firstDifference(read, TrainSettings()), "") << "an absent setting reads as its default";
    // Kept: absent again when written back (an older file stays as it was); Default: written.
    EXPECT_EQ(read.toJson().contains(info.key), info.absent == SettingInfo::Absent::Default);
    EXPECT_EQ(read.has(info.key), info.absent == SettingInfo::Absent::Default);
  }
}

TEST(TrainSettingsTable, ARecordCarriesWhatShapesItsStrategysWork) {
  TrainConfig c;
  const RunConfig plain = RunConfig::make(c, false, "cpu", "shm", 0);
  const RunConfig pipelined = RunConfig::make(c, true, "cpu", "shm", 0);
  for (const SettingInfo& info : table()) {
    SCOPED_TRACE(info.key);
    using R = SettingInfo::Recorded;
    // TrainConfig's defaults leave every text setting recorded WhenSet empty.
    EXPECT_EQ(plain.has(info.key), info.recorded == R::Always);
    EXPECT_EQ(pipelined.has(info.key), info.recorded != R::WhenSet);
  }
  EXPECT_EQ(plain.microbatchesPerStep(), 1);
  EXPECT_EQ(pipelined.microbatchesPerStep(), c.microbatches);
}

}  // namespace
}  // namespace tpb
