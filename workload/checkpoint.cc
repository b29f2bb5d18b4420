#include "workload/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <torch/serialize.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/out_file.h"
#include "workload/checkpoint_check.h"

namespace tpb {

namespace {

using c10::IValue;
using c10::impl::GenericDict;
using c10::impl::GenericList;

GenericDict stringDict() { return GenericDict(c10::StringType::get(), c10::AnyType::get()); }

// Shapes of the MLP's parameters in flat order: [out, in], [out] per Linear layer.
std::vector<std::vector<std::int64_t>> shapesOf(const ModelConfig& m) {
  std::vector<int> w{m.inputs};
  w.insert(w.end(), m.hidden.begin(), m.hidden.end());
  w.push_back(m.classes);
  std::vector<std::vector<std::int64_t>> shapes;
  for (std::size_t l = 0; l + 1 < w.size(); ++l) {
    shapes.push_back({w[l + 1], w[l]});
    shapes.push_back({w[l + 1]});
  }
  return shapes;
}

// nn.Sequential's name of flat parameter i: Linear layers sit at even indices, ReLUs between.
std::string sequentialName(std::size_t i) {
  return std::to_string(2 * (i / 2)) + (i % 2 == 0 ? ".weight" : ".bias");
}

std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// The flat range as a CPU tensor of `shape` (copied, so the file owns its data).
torch::Tensor tensorOf(const std::vector<float>& flat, std::size_t offset, const std::vector<std::int64_t>& shape) {
  return torch::from_blob(const_cast<float*>(flat.data() + offset), shape, torch::kFloat32).clone();
}


// A setting's text as a person writes it: a number in its shortest form that reads back the same
// (the file holds 17 digits, so 0.9 is "0.90000000000000002"), anything else as it is.
std::string readable(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  // Integers stay as written: a seed above 2^53 is no double.
  if (text.find_first_of(".eE") == std::string::npos || *end != '\0' || !std::isfinite(v)) return text;
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  TPB_THROW(UsageError, "--resume_from " << path << ": " << why);
}

// dict[key], or a usage error naming the file and the missing entry.
IValue entry(const GenericDict& d, const std::string& key, const std::string& path, const std::string& where) {
  const auto it = d.find(IValue(key));
  if (it == d.end()) bad(path, "not a tpbench checkpoint (no '" + where + key + "')");
  return it->value();
}

GenericDict dictEntry(const GenericDict& d, const std::string& key, const std::string& path,
                      const std::string& where = "") {
  const IValue v = entry(d, key, path, where);
  if (!v.isGenericDict()) bad(path, "not a tpbench checkpoint ('" + where + key + "' is not a dict)");
  return v.toGenericDict();
}

std::int64_t intEntry(const GenericDict& d, const std::string& key, const std::string& path,
                      const std::string& where = "") {
  const IValue v = entry(d, key, path, where);
  if (!v.isInt()) bad(path, "not a tpbench checkpoint ('" + where + key + "' is not an integer)");
  return v.toInt();
}

// Copies tensor `v` (named `name` for errors) into flat[offset, offset + numel of shape).
void readTensor(const IValue& v, const std::vector<std::int64_t>& shape, std::vector<float>& flat, std::size_t offset,
                const std::string& path, const std::string& name) {
  if (!v.isTensor()) bad(path, "'" + name + "' is not a tensor");
  const torch::Tensor t = v.toTensor();
  if (t.scalar_type() != torch::kFloat32 || t.sizes() != c10::IntArrayRef(shape)) {
    std::string want;
    for (auto d : shape) want += (want.empty() ? "" : "x") + std::to_string(d);
    bad(path, "'" + name + "' is not a float32 tensor of " + want + " (the model of this run's --hidden)");
  }
  const torch::Tensor c = t.contiguous();
  std::memcpy(flat.data() + offset, c.data_ptr<float>(), elements(shape) * sizeof(float));
}

}  // namespace

std::map<std::string, std::string> checkpointConfig(const TrainConfig& cfg) {
  std::map<std::string, std::string> config;
  forEachSetting(
      [&config](const SettingInfo& info, const auto& value) {
        if (info.checkpointed) config[info.key] = settingText(value);
      },
      cfg);
  return config;
}

std::string checkpointPath(const std::string& dir, const TrainConfig& cfg, int epoch) {
  return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + cfg.strategy + "-n" + std::to_string(cfg.nGpus) +
         "-epoch-" + std::to_string(epoch) + ".pt";
}

void saveCheckpoint(const std::string& path, const TrainConfig& cfg, const Checkpoint& ck) {
  const auto shapes = shapesOf(cfg.model());
  GenericDict model = stringDict(), state(c10::IntType::get(), c10::AnyType::get());
  GenericList params(c10::IntType::get());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    TPB_CHECK(offset + elements(shapes[i]) <= ck.state.weights.size(), "checkpoint: too few weights");
    model.insert(sequentialName(i), tensorOf(ck.state.weights, offset, shapes[i]));
    if (!ck.state.velocity.empty()) {
      GenericDict buf = stringDict();
      buf.insert("momentum_buffer", tensorOf(ck.state.velocity, offset, shapes[i]));
      state.insert(static_cast<std::int64_t>(i), buf);
    }
    params.push_back(static_cast<std::int64_t>(i));
    offset += elements(shapes[i]);
  }
  TPB_CHECK(offset == ck.state.weights.size(), "checkpoint: " << ck.state.weights.size() << " weights for a model of "
                                                              << offset);
  GenericDict group = stringDict();
  group.insert("lr", cfg.lr);
  group.insert("momentum", cfg.momentum);
  group.insert("dampening", 0.0);
  group.insert("weight_decay", 0.0);
  group.insert("nesterov", false);
  group.insert("maximize", false);
  group.insert("foreach", IValue());
  group.insert("params", params);
  GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  GenericDict optimizer = stringDict();
  optimizer.insert("state", state);
  optimizer.insert("param_groups", groups);
  GenericDict sampler = stringDict();
  sampler.insert("seed", static_cast<std::int64_t>(ck.samplerSeed));
  sampler.insert("epoch", static_cast<std::int64_t>(ck.epoch));
  sampler.insert("position", static_cast<std::int64_t>(0));
  GenericDict config = stringDict();
  for (const auto& [k, v] : checkpointConfig(cfg)) config.insert(k, v);
  GenericDict doc = stringDict();
  doc.insert("format", std::string(kCheckpointFormat));
  doc.insert("model", model);
  doc.insert("optimizer", optimizer);
  doc.insert("epoch", static_cast<std::int64_t>(ck.epoch));
  doc.insert("steps", static_cast<std::int64_t>(ck.steps));
  doc.insert("sampler", sampler);
  doc.insert("config", config);
  const std::vector<char> bytes = torch::pickle_save(IValue(doc));

  // Temporary file beside the target, then rename: readers see the old file or the whole new one,
  // and a link planted at the name is replaced, not written through.
  AtomicFile out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg) {
  // Checked by tpbench before LibTorch's zip reader and unpickler, which trust their input
  // (workload/checkpoint_check.h): of a checkpoint for this run's model, weights and momentum
  // buffers make up all but a few kilobytes.
  std::uint64_t params = 0;
  for (const auto& s : shapesOf(cfg.model())) params += elements(s);
  const std::vector<char> bytes = readCheckedCheckpoint(
      "--resume_from", path, 2 * params * sizeof(float) + (16u << 20),
      "bytes a checkpoint of this run's model (--hidden) can take");
  IValue root;
  try {
    root = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    // What passed tpbench's checks and still fails in LibTorch (a CRC, an unknown version): its
    // reason's first line, without the backtrace c10 appends.
    const std::string why = e.what();
    bad(path, "not a readable checkpoint (truncated, or not a file torch.save/tpbench wrote): " +
                  why.substr(0, std::min<std::size_t>(why.find('\n'), 200)));
  }
  if (!root.isGenericDict()) bad(path, "not a tpbench checkpoint (not a dict)");
  const GenericDict doc = root.toGenericDict();
  const IValue format = entry(doc, "format", path, "");
  if (!format.isString() || format.toStringRef() != kCheckpointFormat)
    bad(path, std::string("not a tpbench checkpoint ('format' is not ") + kCheckpointFormat + ")");

  // Settings first: "another --hidden" is the clearer message than a tensor of the wrong shape.
  const GenericDict config = dictEntry(doc, "config", path);
  for (const auto& [key, mine] : checkpointConfig(cfg)) {
    const auto it = config.find(IValue(key));
    const std::string theirs = it != config.end() && it->value().isString() ? it->value().toStringRef() : "(none)";
    if (theirs != mine)
      bad(path, "written with --" + key + " " + (theirs.empty() ? "\"\"" : readable(theirs)) + ", this run has --" +
                    key + " " + (mine.empty() ? "\"\"" : readable(mine)));
  }

  Checkpoint ck;
  ck.config = checkpointConfig(cfg);
  ck.epoch = static_cast<int>(intEntry(doc, "epoch", path));
  ck.steps = static_cast<long>(intEntry(doc, "steps", path));
  ck.samplerSeed = static_cast<std::uint64_t>(intEntry(dictEntry(doc, "sampler", path), "seed", path, "sampler."));
  if (ck.epoch < 0 || ck.steps < 0) bad(path, "negative epoch or step count");
  const auto shapes = shapesOf(cfg.model());
  std::size_t total = 0;
  for (const auto& s : shapes) total += elements(s);
  const GenericDict model = dictEntry(doc, "model", path);
  const GenericDict state = dictEntry(dictEntry(doc, "optimizer", path), "state", path, "optimizer.");
  ck.state.weights.assign(total, 0.0f);
  if (cfg.momentum != 0) ck.state.velocity.assign(total, 0.0f);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = sequentialName(i);
    readTensor(entry(model, name, path, "model."), shapes[i], ck.state.weights, offset, path, "model." + name);
    if (cfg.momentum != 0) {
      const auto it = state.find(IValue(static_cast<std::int64_t>(i)));
      if (it == state.end() || !it->value().isGenericDict())
        bad(path, "no momentum buffer for parameter " + std::to_string(i) + " (optimizer.state)");
      readTensor(entry(it->value().toGenericDict(), "momentum_buffer", path, "optimizer.state."), shapes[i],
                 ck.state.velocity, offset, path, "momentum_buffer " + std::to_string(i));
    }
    offset += elements(shapes[i]);
  }
  if (model.size() != shapes.size()) bad(path, "'model' holds " + std::to_string(model.size()) + " tensors, the MLP has " +
                                                   std::to_string(shapes.size()));
  return ck;
}

}  // namespace tpb
