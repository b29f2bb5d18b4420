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
#include "workload/network.h"

namespace tpb {

namespace {

using c10::IValue;
using c10::impl::GenericDict;
using c10::impl::GenericList;

GenericDict stringDict() { return GenericDict(c10::StringType::get(), c10::AnyType::get()); }

std::vector<std::int64_t> sizesOf(const torch::Tensor& t) { return t.sizes().vec(); }

std::size_t elements(const std::vector<std::int64_t>& shape) { return static_cast<std::size_t>(elementCount(shape)); }

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

// Tensor `v` of "model" or the optimizer's state (named `name` for errors), checked to be of `type`
// and `shape` (the model of the run's), contiguous.
torch::Tensor readTensor(const IValue& v, c10::ScalarType type, const std::vector<std::int64_t>& shape,
                         const std::string& path, const std::string& name, const std::string& model) {
  if (!v.isTensor()) bad(path, "'" + name + "' is not a tensor");
  const torch::Tensor t = v.toTensor();
  if (t.scalar_type() != type || t.sizes() != c10::IntArrayRef(shape))
    bad(path, "'" + name + "' is not a " + c10::toString(type) + " tensor of " + sizesText(shape) + " (" + model +
                  ")");
  return t.contiguous();
}

void copyInto(const torch::Tensor& t, std::vector<float>& flat, std::size_t offset) {
  std::memcpy(flat.data() + offset, t.data_ptr<float>(), static_cast<std::size_t>(t.numel()) * sizeof(float));
}

// {name: [sizes...]} of every tensor, in the layout's order.
GenericDict shapesDict(const ModelLayout& layout) {
  GenericDict shapes = stringDict();
  for (const TensorLayout& t : layout) {
    GenericList sizes(c10::IntType::get());
    for (std::int64_t s : t.sizes) sizes.push_back(s);
    shapes.insert(t.name, sizes);
  }
  return shapes;
}

// The file's "shapes" (version 2 on) as a layout; the checker let through only what the pickle
// can hold, so each entry is still checked for its kind here.
ModelLayout readShapes(const GenericDict& doc, const std::string& path) {
  ModelLayout layout;
  for (const auto& item : dictEntry(doc, "shapes", path)) {
    const IValue& sizes = item.value();
    if (!item.key().isString() || !sizes.isList())
      bad(path, "not a tpbench checkpoint ('shapes' is not a dict of names and lists of sizes)");
    TensorLayout t{item.key().toStringRef(), {}};
    for (const IValue& s : sizes.toListRef()) {
      if (!s.isInt()) bad(path, "not a tpbench checkpoint ('shapes." + t.name + "' holds a size that is no integer)");
      t.sizes.push_back(s.toInt());
    }
    layout.push_back(std::move(t));
  }
  return layout;
}

// SGD's param_groups entry: one group of every parameter, with this run's settings.
GenericList paramGroups(const TrainConfig& cfg, std::size_t parameters) {
  GenericList params(c10::IntType::get());
  for (std::size_t i = 0; i < parameters; ++i) params.push_back(static_cast<std::int64_t>(i));
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
  return groups;
}

// "model" (parameters, then buffers) and the optimizer's per-parameter "state" of `ck`.
std::pair<GenericDict, GenericDict> modelAndState(const CheckpointModel& m, const Checkpoint& ck) {
  TPB_CHECK(ck.state.buffers.size() == m.layout.size() - m.parameters,
            "checkpoint: " << ck.state.buffers.size() << " buffers for a model of " << m.layout.size() - m.parameters);
  GenericDict model = stringDict(), state(c10::IntType::get(), c10::AnyType::get());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < m.parameters; ++i) {
    const TensorLayout& t = m.layout[i];
    TPB_CHECK(offset + elements(t.sizes) <= ck.state.weights.size(), "checkpoint: too few weights");
    model.insert(t.name, tensorOf(ck.state.weights, offset, t.sizes));
    if (!ck.state.velocity.empty()) {
      GenericDict buf = stringDict();
      buf.insert("momentum_buffer", tensorOf(ck.state.velocity, offset, t.sizes));
      state.insert(static_cast<std::int64_t>(i), buf);
    }
    offset += elements(t.sizes);
  }
  TPB_CHECK(offset == ck.state.weights.size(),
            "checkpoint: " << ck.state.weights.size() << " weights for a model of " << offset);
  for (std::size_t b = 0; b < ck.state.buffers.size(); ++b)
    model.insert(m.layout[m.parameters + b].name, ck.state.buffers[b].contiguous());
  return {model, state};
}

IValue unpickle(const std::vector<char>& bytes, const std::string& path) {
  try {
    return torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    // What passed tpbench's checks and still fails in LibTorch (a CRC, an unknown version): its
    // reason's first line, without the backtrace c10 appends.
    const std::string why = e.what();
    bad(path, "not a readable checkpoint (truncated, or not a file torch.save/tpbench wrote): " +
                  why.substr(0, std::min<std::size_t>(why.find('\n'), 200)));
  }
}

// The file's format version, refusing one this build does not read.
int formatVersion(const GenericDict& doc, const std::string& path) {
  const IValue format = entry(doc, "format", path, "");
  if (!format.isString()) bad(path, "not a tpbench checkpoint ('format' is not a string)");
  if (const std::string why = formatProblem(format.toStringRef()); !why.empty()) bad(path, why);
  return checkpointVersion(format.toStringRef());
}

// Settings first: "another --hidden" is the clearer message than a tensor of the wrong shape.
void checkConfig(const GenericDict& doc, const TrainConfig& cfg, int version, const std::string& path) {
  const GenericDict config = dictEntry(doc, "config", path);
  for (const auto& [key, mine] : checkpointConfig(cfg)) {
    const auto it = config.find(IValue(key));
    // Version 1 held the MLP only, and its earliest files do not name the workload.
    const std::string absent = version == 1 && key == "workload" ? "mlp" : "(none)";
    const std::string theirs = it == config.end()         ? absent
                               : it->value().isString() ? it->value().toStringRef()
                                                        : "(none)";
    if (theirs != mine)
      bad(path, "written with --" + key + " " + (theirs.empty() ? "\"\"" : readable(theirs)) + ", this run has --" +
                    key + " " + (mine.empty() ? "\"\"" : readable(mine)));
  }
}

// The weights and momentum of the run's parameters, from "model" and the optimizer's state.
void readParameters(const GenericDict& doc, const TrainConfig& cfg, const CheckpointModel& m, const std::string& path,
                    ModelState& out) {
  const GenericDict model = dictEntry(doc, "model", path);
  const GenericDict state = dictEntry(dictEntry(doc, "optimizer", path), "state", path, "optimizer.");
  std::size_t total = 0;
  for (std::size_t i = 0; i < m.parameters; ++i) total += elements(m.layout[i].sizes);
  out.weights.assign(total, 0.0f);
  if (cfg.momentum != 0) out.velocity.assign(total, 0.0f);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < m.parameters; ++i) {
    const TensorLayout& t = m.layout[i];
    const IValue weights = entry(model, t.name, path, "model.");
    copyInto(readTensor(weights, torch::kFloat32, t.sizes, path, "model." + t.name, m.what), out.weights, offset);
    if (cfg.momentum != 0) {
      const auto it = state.find(IValue(static_cast<std::int64_t>(i)));
      if (it == state.end() || !it->value().isGenericDict())
        bad(path, "no momentum buffer for parameter " + std::to_string(i) + " (optimizer.state)");
      copyInto(readTensor(entry(it->value().toGenericDict(), "momentum_buffer", path, "optimizer.state."),
                          torch::kFloat32, t.sizes, path, "momentum_buffer " + std::to_string(i), m.what),
               out.velocity, offset);
    }
    offset += elements(t.sizes);
  }
  if (model.size() != m.layout.size())
    bad(path, "'model' holds " + std::to_string(model.size()) + " tensors, " + m.what + " has " +
                  std::to_string(m.layout.size()));
}

void readBuffers(const GenericDict& doc, const CheckpointModel& m, const std::string& path, ModelState& out) {
  const GenericDict model = dictEntry(doc, "model", path);
  for (std::size_t b = 0; b < m.bufferTypes.size(); ++b) {
    const TensorLayout& t = m.layout[m.parameters + b];
    out.buffers.push_back(
        readTensor(entry(model, t.name, path, "model."), m.bufferTypes[b], t.sizes, path, "model." + t.name, m.what)
            .clone());
  }
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

CheckpointModel checkpointModel(const TrainConfig& cfg) {
  const Trainable trainable = makeTrainable(cfg);
  const std::vector<torch::Tensor> params = trainable->orderedParameters();
  const std::vector<std::string> names = trainable->parameterNames();
  TPB_CHECK(names.size() == params.size(), names.size() << " names for " << params.size() << " parameters");
  CheckpointModel m;
  for (std::size_t i = 0; i < params.size(); ++i) m.layout.push_back({names[i], sizesOf(params[i])});
  m.parameters = params.size();
  const std::vector<torch::Tensor> buffers = trainable->buffers(/*recurse=*/true);
  const std::vector<std::string> bufferNames = trainable->bufferNames();
  TPB_CHECK(bufferNames.size() == buffers.size(), bufferNames.size() << " names for " << buffers.size() << " buffers");
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    m.layout.push_back({bufferNames[i], sizesOf(buffers[i])});
    m.bufferTypes.push_back(buffers[i].scalar_type());
  }
  m.what = "this run's --workload " + cfg.workload;
  return m;
}

void saveCheckpoint(const std::string& path, const TrainConfig& cfg, const CheckpointModel& m, const Checkpoint& ck) {
  const auto [model, state] = modelAndState(m, ck);
  GenericDict optimizer = stringDict();
  optimizer.insert("state", state);
  optimizer.insert("param_groups", paramGroups(cfg, m.parameters));
  GenericDict sampler = stringDict();
  sampler.insert("seed", static_cast<std::int64_t>(ck.samplerSeed));
  sampler.insert("epoch", static_cast<std::int64_t>(ck.epoch));
  sampler.insert("position", static_cast<std::int64_t>(0));
  GenericDict config = stringDict();
  for (const auto& [k, v] : checkpointConfig(cfg)) config.insert(k, v);
  GenericDict doc = stringDict();
  doc.insert("format", std::string(kCheckpointFormat));
  doc.insert("model", model);
  doc.insert("shapes", shapesDict(m.layout));
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

Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg, const CheckpointModel& m) {
  // Checked by tpbench before LibTorch's zip reader and unpickler, which trust their input
  // (workload/checkpoint_check.h): of a checkpoint for this run's model, weights and momentum
  // buffers (or buffers of at most 8 bytes an element) make up all but a few kilobytes.
  std::uint64_t elementsInAll = 0;
  for (const TensorLayout& t : m.layout) elementsInAll += elements(t.sizes);
  const std::vector<char> bytes = readCheckedCheckpoint("--resume_from", path, 8 * elementsInAll + (16u << 20),
                                                        "bytes a checkpoint of this run's model can take");
  const IValue root = unpickle(bytes, path);
  if (!root.isGenericDict()) bad(path, "not a tpbench checkpoint (not a dict)");
  const GenericDict doc = root.toGenericDict();
  const int version = formatVersion(doc, path);
  checkConfig(doc, cfg, version, path);
  if (version >= 2) {
    if (const std::string why = layoutDifference(readShapes(doc, path), m.layout, m.what); !why.empty())
      bad(path, why);
  }
  Checkpoint ck;
  ck.config = checkpointConfig(cfg);
  ck.epoch = static_cast<int>(intEntry(doc, "epoch", path));
  ck.steps = static_cast<long>(intEntry(doc, "steps", path));
  ck.samplerSeed = static_cast<std::uint64_t>(intEntry(dictEntry(doc, "sampler", path), "seed", path, "sampler."));
  if (ck.epoch < 0 || ck.steps < 0) bad(path, "negative epoch or step count");
  readParameters(doc, cfg, m, path, ck.state);
  readBuffers(doc, m, path, ck.state);
  return ck;
}

Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg) {
  return loadCheckpoint(path, cfg, checkpointModel(cfg));
}

}  // namespace tpb
