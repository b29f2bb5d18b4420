// workload/network_spec.cc — workload specs, presets, --workload's spelling and the cost of a
// network from its spec.
#include "workload/network_spec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "common/decimal.h"
#include "common/error.h"
#include "workload/train_config.h"

namespace tpb {

namespace {
constexpr int kMlpInputs = 784, kMlpClasses = 10;
}  // namespace

std::vector<int> parseHidden(const std::string& flag, const std::string& text) {
  auto bad = [&](const std::string& why) {
    TPB_THROW(UsageError, flag << ": " << why << " in '" << text
                               << "' (expected comma-separated positive layer widths, e.g. 512,512)");
  };
  std::vector<int> widths;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) bad("empty width");
    long long value = 0;
    for (char c : item) {
      if (c < '0' || c > '9') bad("'" + item + "' is not a positive integer");
      value = value * 10 + (c - '0');
      if (value > (1 << 20)) bad("width '" + item + "' is too large (at most 1048576)");
    }
    if (value == 0) bad("width must be positive");
    widths.push_back(static_cast<int>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return widths;
}

std::string hiddenText(const std::vector<int>& widths) {
  std::string text;
  for (int w : widths) text += (text.empty() ? "" : ",") + std::to_string(w);
  return text;
}

std::vector<int> resnetStageBlocks(int depth, bool& bottleneck) {
  bottleneck = depth >= 50;
  switch (depth) {
    case 10: return {1, 1, 1, 1};
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default: TPB_THROW(UsageError, "resnet depth " << depth << " is not one of 10, 18, 34, 50, 101, 152");
  }
}

namespace {

NetworkSpec resnetPreset(const std::string& name, int depth) {
  NetworkSpec s;
  s.kind = NetworkKind::Resnet;
  s.name = name;
  s.resnet.depth = depth;
  s.resnet.stageBlocks = resnetStageBlocks(depth, s.resnet.bottleneck);
  return s;  // the other ResnetSpec defaults are ImageNet's
}

NetworkSpec transformerPreset(const std::string& name, NetworkKind kind, int layers, int hidden, int heads) {
  NetworkSpec s;
  s.kind = kind;
  s.name = name;
  auto& t = s.transformer;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = heads;
  t.vocab = kind == NetworkKind::Bert ? 30522 : 50257;
  t.positions = t.seqLen = kind == NetworkKind::Bert ? 512 : 1024;
  return s;
}

}  // namespace

const std::vector<std::string>& networkPresetNames() {
  static const std::vector<std::string> names{"resnet18", "resnet50", "bert-base", "bert-large", "gpt2-small",
                                              "gpt2-medium"};
  return names;
}

NetworkSpec networkPreset(const std::string& name) {
  if (name == "resnet18") return resnetPreset(name, 18);
  if (name == "resnet50") return resnetPreset(name, 50);
  if (name == "bert-base") return transformerPreset(name, NetworkKind::Bert, 12, 768, 12);
  if (name == "bert-large") return transformerPreset(name, NetworkKind::Bert, 24, 1024, 16);
  if (name == "gpt2-small") return transformerPreset(name, NetworkKind::Gpt, 12, 768, 12);
  if (name == "gpt2-medium") return transformerPreset(name, NetworkKind::Gpt, 24, 1024, 16);
  std::ostringstream known;
  for (const auto& n : networkPresetNames()) known << (known.tellp() > 0 ? ", " : "") << n;
  TPB_THROW(UsageError, "unknown network preset '" << name << "' (known: " << known.str() << ")");
}

namespace {

std::string resnetProblem(const ResnetSpec& r) {
  std::ostringstream why;
  if (r.stageBlocks.empty() || r.stageBlocks.size() > 8) why << "a resnet needs 1 to 8 stages";
  for (int b : r.stageBlocks) {
    if (b < 1) why << "every resnet stage needs at least one block";
  }
  if (r.width < 1 || r.width > 4096) why << "resnet width " << r.width << " is not in 1..4096";
  if (r.inChannels < 1 || r.classes < 1 || r.resolution < 1) {
    why << "resnet input channels (" << r.inChannels << "), resolution (" << r.resolution << ") and classes ("
        << r.classes << ") must be positive";
  }
  return why.str();
}

std::string transformerProblem(NetworkKind kind, const TransformerSpec& t) {
  std::ostringstream why;
  if (t.layers < 1 || t.hidden < 1 || t.heads < 1 || t.ffn < 0 || t.vocab < 2 || t.positions < 1 || t.seqLen < 1) {
    why << "transformer layers, hidden, heads, positions and sequence length must be positive, vocab at least 2";
  } else if (t.hidden % t.heads != 0) {
    why << "hidden width " << t.hidden << " is not a multiple of the " << t.heads << " heads";
  } else if (t.seqLen > t.positions) {
    why << "sequence length " << t.seqLen << " exceeds the " << t.positions << " positions";
  } else if (kind == NetworkKind::Bert && (t.tokenTypes < 1 || t.classes < 1)) {
    why << "bert needs at least one token type and one class";
  }
  return why.str();
}

}  // namespace

std::string networkProblem(const NetworkSpec& spec) {
  switch (spec.kind) {
    case NetworkKind::Mlp:
      for (int w : spec.mlp.hidden)
        if (w < 1) return "every hidden width of the mlp must be positive";
      return spec.mlp.hidden.empty() ? "the mlp needs at least one hidden layer" : "";
    case NetworkKind::Resnet: return resnetProblem(spec.resnet);
    default: return transformerProblem(spec.kind, spec.transformer);
  }
}

// ---- cost ----------------------------------------------------------------------------------------

namespace {

// Parameters, forward FLOPs and activation floats of one sample, added up layer by layer.
struct Tally {
  double params = 0, flops = 0, activations = 0;
};

// A bias-free k x k conv (padding k/2) and its norm on a size x size input; `size` becomes the
// output's. Keeps the conv's output (the norm's input) and the ReLU's (the next conv's input).
void convUnit(Tally& t, double in, double out, int k, int stride, int& size) {
  size = (size + 2 * (k / 2) - k) / stride + 1;
  const double pixels = static_cast<double>(size) * size;
  t.params += in * out * k * k + 2 * out;
  t.flops += 2 * in * out * k * k * pixels;
  t.activations += 2 * out * pixels;
}

void residualBlock(Tally& t, int in, int planes, int stride, bool bottleneck, int& size) {
  const int out = bottleneck ? 4 * planes : planes;
  int inSize = size;
  if (bottleneck) {
    convUnit(t, in, planes, 1, 1, size);
    convUnit(t, planes, planes, 3, stride, size);
    convUnit(t, planes, out, 1, 1, size);
  } else {
    convUnit(t, in, planes, 3, stride, size);
    convUnit(t, planes, planes, 3, 1, size);
  }
  if (stride != 1 || in != out) convUnit(t, in, out, 1, stride, inSize);
  t.activations += static_cast<double>(out) * size * size;  // the block's output ReLU
}

// The stem (the image and its conv), each residual block, the head (pool and Linear).
std::vector<Tally> resnetTallies(const ResnetSpec& r) {
  std::vector<Tally> blocks(1);
  int size = r.resolution;
  blocks[0].activations += static_cast<double>(r.inChannels) * size * size;
  convUnit(blocks[0], r.inChannels, r.width, r.imagenetStem ? 7 : 3, r.imagenetStem ? 2 : 1, size);
  if (r.imagenetStem) size = (size + 2 - 3) / 2 + 1;
  int in = r.width;
  for (std::size_t s = 0; s < r.stageBlocks.size(); ++s) {
    for (int b = 0; b < r.stageBlocks[s]; ++b) {
      blocks.emplace_back();
      residualBlock(blocks.back(), in, r.width << s, s > 0 && b == 0 ? 2 : 1, r.bottleneck, size);
      in = r.bottleneck ? 4 * (r.width << s) : r.width << s;
    }
  }
  blocks.push_back({static_cast<double>(in) * r.classes + r.classes, 2.0 * in * r.classes, static_cast<double>(in)});
  return blocks;
}

// 784 -> hidden... -> 10, one Linear each: its weights and bias; its output and the ReLU's are
// kept (the first also keeps the image).
std::vector<Tally> mlpTallies(const MlpSpec& m) {
  std::vector<Tally> layers;
  double in = kMlpInputs;
  std::vector<int> widths = m.hidden;
  widths.push_back(kMlpClasses);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const double out = widths[i];
    layers.push_back({in * out + out, 2 * in * out, (i == 0 ? in : 0) + (i + 1 < widths.size() ? 2 * out : out)});
    in = out;
  }
  return layers;
}

// One transformer layer (GPT-2's and BERT's have the same shapes): Q, K, V and output
// projections 4H^2 + 4H, two norms 4H, the FFN 2HF + F + H.
Tally transformerLayer(const TransformerSpec& s) {
  const double h = s.hidden, f = s.ffnWidth(), t = s.seqLen;
  return {4 * h * h + 2 * h * f + 9 * h + f, 2 * t * (4 * h * h + 2 * h * f) + 4 * t * t * h,  // + QK^T and AV
          t * (8 * h + 2 * f + s.heads * t)};
}

// The embeddings, each layer, the head.
std::vector<Tally> transformerTallies(NetworkKind kind, const TransformerSpec& s) {
  const double h = s.hidden, t = s.seqLen, v = s.vocab;
  std::vector<Tally> blocks;
  if (kind == NetworkKind::Gpt) {
    blocks.push_back({(v + s.positions) * h, 0, t * h});  // the embedding sum
  } else {
    blocks.push_back({(v + s.positions + s.tokenTypes) * h + 2 * h, 0, t * 2 * h});  // the norm's input and output
  }
  blocks.insert(blocks.end(), static_cast<std::size_t>(s.layers), transformerLayer(s));
  if (kind == NetworkKind::Gpt) {
    // ln_f (the LM head is tied to the token embedding); ln_f's input and output, log-probabilities.
    blocks.push_back({2 * h, 2 * t * h * v, t * (2 * h + v)});
  } else {
    blocks.push_back({h * h + h + h * s.classes + s.classes, 2 * h * h + 2 * h * s.classes, 2 * h});  // the pooler
  }
  return blocks;
}

std::vector<Tally> talliesOf(const NetworkSpec& spec) {
  switch (spec.kind) {
    case NetworkKind::Mlp: return mlpTallies(spec.mlp);
    case NetworkKind::Resnet: return resnetTallies(spec.resnet);
    default: return transformerTallies(spec.kind, spec.transformer);
  }
}

NetworkCost costOf(const Tally& t) {
  NetworkCost c;
  c.parameters = static_cast<std::size_t>(t.params);
  c.gradientBytes = c.parameters * sizeof(float);
  c.forwardFlops = t.flops;
  c.trainFlops = 3 * t.flops;
  c.activationBytes = t.activations * sizeof(float);
  return c;
}

}  // namespace

std::size_t evalBatchSize(double activationBytesPerSample, int trainBatch) {
  const std::size_t train = trainBatch > 0 ? static_cast<std::size_t>(trainBatch) : 1;
  std::size_t fits = kMaxEvalBatch;
  if (activationBytesPerSample > 0)
    fits = static_cast<std::size_t>(std::min<double>(kMaxEvalBatch, kEvalActivationBytes / activationBytesPerSample));
  return std::max(train, fits);
}

std::vector<NetworkCost> networkBlockCosts(const NetworkSpec& spec) {
  std::vector<NetworkCost> costs;
  for (const Tally& t : talliesOf(spec)) costs.push_back(costOf(t));
  return costs;
}

NetworkCost networkCost(const NetworkSpec& spec) {
  Tally sum;
  for (const Tally& t : talliesOf(spec)) {
    sum.params += t.params;
    sum.flops += t.flops;
    sum.activations += t.activations;
  }
  return costOf(sum);
}

// ---- --workload ----------------------------------------------------------------------------------

namespace {

bool isPreset(const std::string& name) {
  for (const auto& n : networkPresetNames())
    if (n == name) return true;
  return false;
}

// The image shapes a resnet trains on: channels, resolution, classes and stem.
void setImage(NetworkSpec& s, const std::string& image) {
  auto& r = s.resnet;
  s.mnistImages = image == "mnist";
  r.inChannels = image == "mnist" ? 1 : 3;
  r.resolution = image == "mnist" ? 28 : image == "cifar" ? 32 : 224;
  r.classes = image == "imagenet" ? 1000 : 10;
  r.imagenetStem = image == "imagenet";
}

std::string imageOf(const NetworkSpec& s) {
  return s.mnistImages ? "mnist" : s.resnet.imagenetStem ? "imagenet" : "cifar";
}

class WorkloadParser {
 public:
  WorkloadParser(const std::string& flag, const std::string& text) : flag_(flag), text_(text) {}

  [[noreturn]] void refuse(const std::string& why) const {
    TPB_THROW(UsageError, flag_ << " '" << text_ << "': " << why);
  }

  // "name:k=v:k=v" into the name and its keys, each once.
  std::string split(std::map<std::string, std::string>& keys) const {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
      const std::size_t colon = text_.find(':', start);
      parts.push_back(text_.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const std::size_t eq = parts[i].find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == parts[i].size())
        refuse("'" + parts[i] + "' is not KEY=VALUE");
      const std::string key = parts[i].substr(0, eq);
      if (!keys.emplace(key, parts[i].substr(eq + 1)).second) refuse(key + " given twice");
    }
    return parts[0];
  }

  int integer(const std::string& key, const std::string& value, long long lo, long long hi) const {
    std::string why;
    const auto v = parseDecimalInteger<long long>(value, why);
    if (!v) refuse(key + ": " + why);
    if (*v < lo || *v > hi)
      refuse(key + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", not " + value);
    return static_cast<int>(*v);
  }

  std::string choice(const std::string& key, const std::string& value, const std::vector<std::string>& allowed) const {
    std::string known;
    for (const auto& a : allowed) {
      if (a == value) return value;
      known += (known.empty() ? "" : ", ") + a;
    }
    refuse(key + "=" + value + " is not one of " + known);
  }

 private:
  const std::string& flag_;
  const std::string& text_;
};

// Bounds on every size: enough for the published networks many times over, small enough that no
// product in networkCost() or a memory estimate overflows before the memory check refuses it.
constexpr long long kMaxWidth = 65536, kMaxLayers = 1024, kMaxVocab = 1 << 22, kMaxSeq = 1 << 16,
                    kMaxClasses = 1 << 20, kMaxResolution = 4096;

}  // namespace

NetworkSpec parseWorkload(const std::string& flag, const std::string& text, const std::string& hidden) {
  const WorkloadParser p(flag, text);
  std::map<std::string, std::string> keys;
  const std::string name = p.split(keys);
  NetworkSpec s;
  std::vector<std::string> allowed;
  if (name == "mlp") {
    s.mlp.hidden = parseHidden("--hidden", hidden);
  } else if (name == "resnet") {
    s.kind = NetworkKind::Resnet;
    s.name = name;
    s.resnet.depth = 10;
    s.resnet.width = 16;
    s.resnet.norm = ConvNorm::Group;
    setImage(s, "mnist");
    allowed = {"depth", "width", "image", "res", "classes", "norm"};
  } else if (name == "gpt" || name == "bert") {
    s.kind = name == "gpt" ? NetworkKind::Gpt : NetworkKind::Bert;
    s.name = name;
    auto& t = s.transformer;
    t.layers = 2;
    t.hidden = 128;
    t.heads = 4;
    t.vocab = 1024;
    t.positions = t.seqLen = 64;
    allowed = {"layers", "hidden", "heads", "ffn", "vocab", "seq"};
    if (name == "bert") allowed.push_back("classes");
  } else if (isPreset(name)) {
    s = networkPreset(name);
    allowed = s.kind == NetworkKind::Resnet ? std::vector<std::string>{"res", "norm"} : std::vector<std::string>{"seq"};
  } else {
    p.refuse("unknown workload '" + name + "' (known: " + workloadChoices() + ")");
  }
  for (const auto& [key, value] : keys) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (!ok) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      p.refuse("'" + name + "' takes no key '" + key + "'" +
               (list.empty() ? std::string(" (it takes none)") : " (it takes: " + list + ")") +
               (isPreset(name) ? "; a preset keeps its published layer shapes" : ""));
    }
  }
  const auto has = [&](const char* k) { return keys.count(k) > 0; };
  if (s.kind == NetworkKind::Resnet) {
    auto& r = s.resnet;
    if (has("image")) setImage(s, p.choice("image", keys.at("image"), {"mnist", "cifar", "imagenet"}));
    if (has("depth")) {
      r.depth = p.integer("depth", keys.at("depth"), 10, 152);
      if (r.depth != 10 && r.depth != 18 && r.depth != 34 && r.depth != 50 && r.depth != 101 && r.depth != 152)
        p.refuse("depth must be one of 10, 18, 34, 50, 101, 152, not " + keys.at("depth"));
    }
    r.stageBlocks = resnetStageBlocks(r.depth, r.bottleneck);
    if (has("width")) r.width = p.integer("width", keys.at("width"), 1, 4096);
    if (has("res")) {
      if (s.mnistImages) p.refuse("res: mnist images are 28x28 (give image=cifar or imagenet to choose a resolution)");
      r.resolution = p.integer("res", keys.at("res"), 8, kMaxResolution);
    }
    if (has("classes")) {
      if (s.mnistImages) p.refuse("classes: mnist images have 10 classes");
      r.classes = p.integer("classes", keys.at("classes"), 2, kMaxClasses);
    }
    if (has("norm")) r.norm = p.choice("norm", keys.at("norm"), {"group", "batch"}) == "group" ? ConvNorm::Group : ConvNorm::Batch;
  } else if (s.kind != NetworkKind::Mlp) {
    auto& t = s.transformer;
    const bool preset = isPreset(name);
    if (has("layers")) t.layers = p.integer("layers", keys.at("layers"), 1, kMaxLayers);
    if (has("hidden")) t.hidden = p.integer("hidden", keys.at("hidden"), 1, kMaxWidth);
    if (has("heads")) t.heads = p.integer("heads", keys.at("heads"), 1, kMaxWidth);
    if (has("ffn")) t.ffn = p.integer("ffn", keys.at("ffn"), 1, 4 * kMaxWidth);
    if (has("vocab")) t.vocab = p.integer("vocab", keys.at("vocab"), 2, kMaxVocab);
    if (has("classes")) t.classes = p.integer("classes", keys.at("classes"), 2, kMaxClasses);
    if (has("seq")) {
      t.seqLen = p.integer("seq", keys.at("seq"), 1, preset ? t.positions : kMaxSeq);
      if (!preset) t.positions = t.seqLen;
    }
  }
  const std::string problem = networkProblem(s);
  if (!problem.empty()) p.refuse(problem);
  return s;
}

std::string workloadText(const NetworkSpec& s) {
  std::ostringstream o;
  o << s.name;
  const bool preset = isPreset(s.name);
  if (s.kind == NetworkKind::Resnet) {
    const auto& r = s.resnet;
    const char* norm = r.norm == ConvNorm::Group ? "group" : "batch";
    if (preset) {
      if (r.resolution != 224) o << ":res=" << r.resolution;
      if (r.norm != ConvNorm::Batch) o << ":norm=" << norm;
    } else {
      o << ":depth=" << r.depth << ":width=" << r.width << ":image=" << imageOf(s);
      if (!s.mnistImages) o << ":res=" << r.resolution << ":classes=" << r.classes;
      o << ":norm=" << norm;
    }
  } else if (s.kind != NetworkKind::Mlp) {
    const auto& t = s.transformer;
    if (preset) {
      if (t.seqLen != t.positions) o << ":seq=" << t.seqLen;
    } else {
      o << ":layers=" << t.layers << ":hidden=" << t.hidden << ":heads=" << t.heads << ":ffn=" << t.ffnWidth()
        << ":vocab=" << t.vocab << ":seq=" << t.seqLen;
      if (s.kind == NetworkKind::Bert) o << ":classes=" << t.classes;
    }
  }
  return o.str();
}

std::string workloadChoices() {
  std::string out = "mlp, resnet, gpt, bert";
  for (const auto& n : networkPresetNames()) out += ", " + n;
  return out;
}

double sampleBytes(const NetworkSpec& s) {
  switch (s.kind) {
    case NetworkKind::Mlp: return kMlpInputs * 4.0 + 8;
    case NetworkKind::Resnet:
      return 4.0 * s.resnet.inChannels * s.resnet.resolution * s.resnet.resolution + 8;
    case NetworkKind::Gpt: return 16.0 * s.transformer.seqLen;
    case NetworkKind::Bert: return 8.0 * s.transformer.seqLen + 8;
  }
  return 0;
}

namespace {
std::size_t samplesIn(const NetworkSpec& spec, double bytes, std::size_t least, std::size_t most) {
  const double n = std::floor(bytes / sampleBytes(spec));
  return n < static_cast<double>(least) ? least : n > static_cast<double>(most) ? most : static_cast<std::size_t>(n);
}
}  // namespace

std::size_t workloadTrainSize(const NetworkSpec& spec) { return samplesIn(spec, 256.0 * (1 << 20), 64, 60000); }
std::size_t workloadTestSize(const NetworkSpec& spec) {
  const std::size_t bySize = samplesIn(spec, 32.0 * (1 << 20), 32, 10000);
  const double forward = networkCost(spec).forwardFlops;
  if (!(forward > 0)) return bySize;
  const double byFlops = std::max<double>(kLeastTestSamples, std::floor(kEvalForwardFlops / forward));
  return byFlops < static_cast<double>(bySize) ? static_cast<std::size_t>(byFlops) : bySize;
}

}  // namespace tpb
