// workload/network_blocks.cc — the blocks of workload/network.h's networks and their
// initialisation.
#include "workload/network_blocks.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "workload/sampler.h"

// Bit-identical weights on every machine: no fused multiply-adds (see workload/model.cc).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tpb {

namespace {

template <typename Draw>
void fillWith(torch::Tensor& t, Draw draw) {
  torch::NoGradGuard noGrad;
  auto cpu = torch::empty(t.sizes(), torch::kFloat32);
  float* p = cpu.data_ptr<float>();
  for (std::int64_t i = 0; i < cpu.numel(); ++i) p[i] = draw();
  t.copy_(cpu);
}

torch::nn::Linear linear(torch::nn::Module& owner, const std::string& name, int in, int out) {
  return owner.register_module(name, torch::nn::Linear(in, out));
}

torch::nn::LayerNorm layerNorm(torch::nn::Module& owner, const std::string& name, int width, double eps) {
  return owner.register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(eps)));
}

// Transformer weights: normal weight, zero bias (GPT-2's and BERT's Linear init).
void initLinear(torch::nn::Linear& l, float stddev, SplitMix64& g) {
  fillNormal(l->weight, stddev, g);
  fillConstant(l->bias, 0.0f);
}

// PyTorch's default Linear init: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void initLinearDefault(torch::nn::Linear& l, SplitMix64& g) {
  const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(l->weight.size(1))));
  fillUniform(l->weight, bound, g);
  fillUniform(l->bias, bound, g);
}

void initNorm(torch::Tensor& weight, torch::Tensor& bias) {
  fillConstant(weight, 1.0f);
  fillConstant(bias, 0.0f);
}

// The largest divisor of `channels` up to 32: GroupNorm's groups (32 is Wu and He's default).
int groupsFor(int channels) {
  for (int g = 32; g > 1; --g) {
    if (channels % g == 0) return g;
  }
  return 1;
}

constexpr float kInitRange = 0.02f;  // GPT-2's and BERT's initializer_range

}  // namespace

// N(0, 1) approximated by the sum of six 21-bit uniforms (Irwin–Hall), centred and scaled:
// integer arithmetic and one float multiply, so every platform draws the same bits. Two words
// of the stream per draw; bounded at +-4.24.
float standardNormal(SplitMix64& g) {
  std::int64_t sum = 0;
  for (int word = 0; word < 2; ++word) {
    const std::uint64_t x = g.next();
    sum += static_cast<std::int64_t>((x & 0x1FFFFF) + ((x >> 21) & 0x1FFFFF) + ((x >> 42) & 0x1FFFFF));
  }
  // Six U{0..2^21-1}: mean 6 (2^21-1)/2, variance 6 (2^42-1)/12.
  constexpr std::int64_t kMean = 6291453;
  constexpr float kScale = 6.7434958e-07f;  // 1 / sqrt((2^42 - 1) / 2)
  return static_cast<float>(sum - kMean) * kScale;
}

void fillNormal(torch::Tensor& t, float stddev, SplitMix64& g) {
  fillWith(t, [&] { return stddev * standardNormal(g); });
}

void fillUniform(torch::Tensor& t, float bound, SplitMix64& g) {
  fillWith(t, [&] { return bound * (2.0f * g.uniform() - 1.0f); });
}

void fillConstant(torch::Tensor& t, float value) {
  torch::NoGradGuard noGrad;
  t.fill_(value);
}

// ---- ResNet --------------------------------------------------------------------------------------

ConvUnit::ConvUnit(torch::nn::Module& owner, const std::string& name, const std::string& normName, int in,
                   int out, int kernel, int stride, ConvNorm norm) {
  conv_ = owner.register_module(
      name, torch::nn::Conv2d(
                torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false)));
  if (norm == ConvNorm::Batch) {
    batch_ = owner.register_module(normName, torch::nn::BatchNorm2d(out));
  } else {
    group_ = owner.register_module(normName, torch::nn::GroupNorm(groupsFor(out), out));
  }
}

torch::Tensor ConvUnit::forward(const torch::Tensor& x) {
  auto y = conv_->forward(x);
  return batch_ ? batch_->forward(y) : group_->forward(y);
}

void ConvUnit::initialize(SplitMix64& g) {
  // torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / fan_out).
  const auto& w = conv_->weight;
  const double fanOut = static_cast<double>(w.size(0) * w.size(2) * w.size(3));
  fillNormal(conv_->weight, static_cast<float>(std::sqrt(2.0 / fanOut)), g);
  if (batch_) {
    initNorm(batch_->weight, batch_->bias);
  } else {
    initNorm(group_->weight, group_->bias);
  }
}

ResnetStem::ResnetStem(const ResnetSpec& spec) : pool_(spec.imagenetStem) {
  unit_ = std::make_shared<ConvUnit>(*this, "conv1", "bn1", spec.inChannels, spec.width,
                                     spec.imagenetStem ? 7 : 3, spec.imagenetStem ? 2 : 1, spec.norm);
}

torch::Tensor ResnetStem::forward(torch::Tensor x) {
  x = torch::relu(unit_->forward(x));
  return pool_ ? torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}) : x;
}

void ResnetStem::initialize(SplitMix64& g) { unit_->initialize(g); }

ResidualBlock::ResidualBlock(int in, int planes, int stride, bool bottleneck, ConvNorm norm)
    : out_(bottleneck ? 4 * planes : planes) {
  auto unit = [&](int i, int cin, int cout, int kernel, int s) {
    const auto n = std::to_string(i);
    units_.push_back(std::make_shared<ConvUnit>(*this, "conv" + n, "bn" + n, cin, cout, kernel, s, norm));
  };
  if (bottleneck) {
    unit(1, in, planes, 1, 1);
    unit(2, planes, planes, 3, stride);
    unit(3, planes, out_, 1, 1);
  } else {
    unit(1, in, planes, 3, stride);
    unit(2, planes, planes, 3, 1);
  }
  if (stride != 1 || in != out_) {
    downsample_ = std::make_shared<ConvUnit>(*this, "downsample_conv", "downsample_bn", in, out_, 1, stride, norm);
  }
}

torch::Tensor ResidualBlock::forward(torch::Tensor x) {
  auto y = x;
  for (std::size_t i = 0; i < units_.size(); ++i) {
    y = units_[i]->forward(y);
    if (i + 1 < units_.size()) y = torch::relu(y);
  }
  return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
}

void ResidualBlock::initialize(SplitMix64& g) {
  for (auto& u : units_) u->initialize(g);
  if (downsample_) downsample_->initialize(g);
}

ResnetHead::ResnetHead(int in, int classes) : fc_(linear(*this, "fc", in, classes)) {}

torch::Tensor ResnetHead::forward(torch::Tensor x) { return fc_->forward(x.mean({2, 3})); }

void ResnetHead::initialize(SplitMix64& g) { initLinearDefault(fc_, g); }

// ---- attention -----------------------------------------------------------------------------------

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int heads,
                        bool causal) {
  const auto b = q.size(0), t = q.size(1), width = q.size(2), d = width / heads;
  auto split = [&](const torch::Tensor& x) { return x.reshape({b, t, heads, d}).transpose(1, 2); };
  auto scores = torch::matmul(split(q), split(k).transpose(-2, -1)) *
                static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  if (causal) {
    const auto future = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1), split(v)).transpose(1, 2).reshape({b, t, width});
}

// ---- GPT-2 ---------------------------------------------------------------------------------------

GptEmbedding::GptEmbedding(const TransformerSpec& spec) {
  wte_ = register_module("wte", torch::nn::Embedding(spec.vocab, spec.hidden));
  wpe_ = register_module("wpe", torch::nn::Embedding(spec.positions, spec.hidden));
}

torch::Tensor GptEmbedding::forward(torch::Tensor ids) {
  const auto positions = torch::arange(ids.size(1), torch::TensorOptions().dtype(torch::kInt64).device(ids.device()));
  return wte_->forward(ids) + wpe_->forward(positions);
}

void GptEmbedding::initialize(SplitMix64& g) {
  fillNormal(wte_->weight, kInitRange, g);
  fillNormal(wpe_->weight, kInitRange, g);
}

GptLayer::GptLayer(const TransformerSpec& spec) : spec_(spec) {
  ln1_ = layerNorm(*this, "ln_1", spec.hidden, 1e-5);
  qkv_ = linear(*this, "c_attn", spec.hidden, 3 * spec.hidden);
  proj_ = linear(*this, "attn_c_proj", spec.hidden, spec.hidden);
  ln2_ = layerNorm(*this, "ln_2", spec.hidden, 1e-5);
  fc_ = linear(*this, "c_fc", spec.hidden, spec.ffnWidth());
  fcProj_ = linear(*this, "mlp_c_proj", spec.ffnWidth(), spec.hidden);
}

// Pre-LN: x + attn(ln_1(x)), then + mlp(ln_2(x)); GPT-2's GELU is the tanh approximation.
torch::Tensor GptLayer::forward(torch::Tensor x) {
  const auto qkv = qkv_->forward(ln1_->forward(x)).chunk(3, -1);
  x = x + proj_->forward(attention(qkv[0], qkv[1], qkv[2], spec_.heads, /*causal=*/true));
  return x + fcProj_->forward(torch::gelu(fc_->forward(ln2_->forward(x)), "tanh"));
}

void GptLayer::initialize(SplitMix64& g) {
  // GPT-2 scales the projections that write into the residual stream by 1/sqrt(2 layers).
  const float residual = static_cast<float>(kInitRange / std::sqrt(2.0 * spec_.layers));
  initNorm(ln1_->weight, ln1_->bias);
  initLinear(qkv_, kInitRange, g);
  initLinear(proj_, residual, g);
  initNorm(ln2_->weight, ln2_->bias);
  initLinear(fc_, kInitRange, g);
  initLinear(fcProj_, residual, g);
}

GptHead::GptHead(const TransformerSpec& spec, torch::Tensor tiedWeight) : tied_(std::move(tiedWeight)) {
  lnf_ = layerNorm(*this, "ln_f", spec.hidden, 1e-5);
}

torch::Tensor GptHead::forward(torch::Tensor x) { return torch::matmul(lnf_->forward(x), tied_.t()); }

void GptHead::initialize(SplitMix64&) { initNorm(lnf_->weight, lnf_->bias); }

// ---- BERT ----------------------------------------------------------------------------------------

BertEmbedding::BertEmbedding(const TransformerSpec& spec) : spec_(spec) {
  word_ = register_module("word_embeddings", torch::nn::Embedding(spec.vocab, spec.hidden));
  position_ = register_module("position_embeddings", torch::nn::Embedding(spec.positions, spec.hidden));
  type_ = register_module("token_type_embeddings", torch::nn::Embedding(spec.tokenTypes, spec.hidden));
  norm_ = layerNorm(*this, "LayerNorm", spec.hidden, 1e-12);
}

// Token types split the sequence into tokenTypes equal segments (sentence A, sentence B), so
// every type's embedding is trained without a second input tensor.
torch::Tensor BertEmbedding::forward(torch::Tensor ids) {
  const auto t = ids.size(1);
  const auto positions = torch::arange(t, torch::TensorOptions().dtype(torch::kInt64).device(ids.device()));
  const auto types = torch::div(positions * spec_.tokenTypes, t, "floor");
  return norm_->forward(word_->forward(ids) + position_->forward(positions) + type_->forward(types));
}

void BertEmbedding::initialize(SplitMix64& g) {
  fillNormal(word_->weight, kInitRange, g);
  fillNormal(position_->weight, kInitRange, g);
  fillNormal(type_->weight, kInitRange, g);
  initNorm(norm_->weight, norm_->bias);
}

BertLayer::BertLayer(const TransformerSpec& spec) : spec_(spec) {
  query_ = linear(*this, "query", spec.hidden, spec.hidden);
  key_ = linear(*this, "key", spec.hidden, spec.hidden);
  value_ = linear(*this, "value", spec.hidden, spec.hidden);
  attnOut_ = linear(*this, "attention_output", spec.hidden, spec.hidden);
  attnNorm_ = layerNorm(*this, "attention_LayerNorm", spec.hidden, 1e-12);
  intermediate_ = linear(*this, "intermediate", spec.hidden, spec.ffnWidth());
  output_ = linear(*this, "output", spec.ffnWidth(), spec.hidden);
  outNorm_ = layerNorm(*this, "output_LayerNorm", spec.hidden, 1e-12);
}

// Post-LN and bidirectional: LN(x + attn(x)), then LN(x + ffn(x)); BERT's GELU is the exact one.
torch::Tensor BertLayer::forward(torch::Tensor x) {
  const auto a = attention(query_->forward(x), key_->forward(x), value_->forward(x), spec_.heads, false);
  x = attnNorm_->forward(x + attnOut_->forward(a));
  return outNorm_->forward(x + output_->forward(torch::gelu(intermediate_->forward(x))));
}

void BertLayer::initialize(SplitMix64& g) {
  for (auto* l : {&query_, &key_, &value_, &attnOut_}) initLinear(*l, kInitRange, g);
  initNorm(attnNorm_->weight, attnNorm_->bias);
  initLinear(intermediate_, kInitRange, g);
  initLinear(output_, kInitRange, g);
  initNorm(outNorm_->weight, outNorm_->bias);
}

BertHead::BertHead(const TransformerSpec& spec)
    : pooler_(linear(*this, "pooler", spec.hidden, spec.hidden)),
      classifier_(linear(*this, "classifier", spec.hidden, spec.classes)) {}

// BertPooler (tanh of a Linear on the first token) then BertForSequenceClassification's Linear.
torch::Tensor BertHead::forward(torch::Tensor x) {
  return classifier_->forward(torch::tanh(pooler_->forward(x.select(1, 0))));
}

void BertHead::initialize(SplitMix64& g) {
  initLinear(pooler_, kInitRange, g);
  initLinear(classifier_, kInitRange, g);
}

}  // namespace tpb
