// workload/network_blocks.h — the blocks workload/network.h builds its networks from. Submodule
// names (and so the parameter order within a block) follow torchvision's ResNet and Hugging
// Face's GPT-2 and BERT, so a Python rebuild can list its parameters in the same order:
//   ResnetStem:       conv1, bn1 (the norm; GroupNorm under ConvNorm::Group)
//   BasicBlock:       conv1, bn1, conv2, bn2[, downsample_conv, downsample_bn]
//   BottleneckBlock:  conv1, bn1, conv2, bn2, conv3, bn3[, downsample_conv, downsample_bn]
//   ResnetHead:       fc
//   GptEmbedding:     wte, wpe
//   GptLayer:         ln_1, c_attn (Q, K, V in one Linear), attn_c_proj, ln_2, c_fc, mlp_c_proj
//   GptHead:          ln_f (the tied LM head's weight belongs to GptEmbedding's wte)
//   BertEmbedding:    word_embeddings, position_embeddings, token_type_embeddings, LayerNorm
//   BertLayer:        query, key, value, attention_output, attention_LayerNorm, intermediate,
//                     output, output_LayerNorm
//   BertHead:         pooler, classifier
// Every module's bias is registered after its weight (LibTorch's and PyTorch's order).
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "workload/network.h"

namespace tpb {

// N(0, 1) approximated by the sum of six 21-bit uniforms (Irwin–Hall), bounded at +-4.24:
// the same bits on every platform. Consumes two words of `g`.
float standardNormal(SplitMix64& g);

// Fills `t` (any device) from `g`, element by element in row-major order.
void fillNormal(torch::Tensor& t, float stddev, SplitMix64& g);
void fillUniform(torch::Tensor& t, float bound, SplitMix64& g);
void fillConstant(torch::Tensor& t, float value);  // draws nothing

// A convolution without bias and its norm: the unit ResNets repeat. Not a module itself: it
// registers both layers in `owner` under `name` and `normName`, as torchvision names them.
class ConvUnit {
 public:
  ConvUnit(torch::nn::Module& owner, const std::string& name, const std::string& normName, int in,
               int out, int kernel, int stride, ConvNorm norm);
  torch::Tensor forward(const torch::Tensor& x);
  void initialize(SplitMix64& g);

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d batch_{nullptr};
  torch::nn::GroupNorm group_{nullptr};
};

class ResnetStem : public NetworkBlock {
 public:
  explicit ResnetStem(const ResnetSpec& spec);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  std::shared_ptr<ConvUnit> unit_;
  bool pool_;
};

// He et al.'s residual block; the stride sits on the first 3x3 conv (basic) or on the 3x3 conv
// (bottleneck, torchvision's "ResNet v1.5"); a 1x1 conv and norm project the shortcut when the
// shape changes.
class ResidualBlock : public NetworkBlock {
 public:
  ResidualBlock(int in, int planes, int stride, bool bottleneck, ConvNorm norm);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;
  int outChannels() const { return out_; }

 private:
  std::vector<std::shared_ptr<ConvUnit>> units_;
  std::shared_ptr<ConvUnit> downsample_;
  int out_;
};

class ResnetHead : public NetworkBlock {
 public:
  ResnetHead(int in, int classes);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  torch::nn::Linear fc_{nullptr};
};

class GptEmbedding : public NetworkBlock {
 public:
  explicit GptEmbedding(const TransformerSpec& spec);
  torch::Tensor forward(torch::Tensor ids) override;
  void initialize(SplitMix64& g) override;
  const torch::Tensor& tokenWeight() const { return wte_->weight; }

 private:
  torch::nn::Embedding wte_{nullptr}, wpe_{nullptr};
};

class GptLayer : public NetworkBlock {
 public:
  explicit GptLayer(const TransformerSpec& spec);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  TransformerSpec spec_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc_{nullptr}, fcProj_{nullptr};
};

class GptHead : public NetworkBlock {
 public:
  GptHead(const TransformerSpec& spec, torch::Tensor tiedWeight);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  torch::nn::LayerNorm lnf_{nullptr};
  // GptEmbedding's wte weight, not registered here (it would be listed twice). It shares the
  // parameter's TensorImpl, so Module::to() and FlatParams, which set_data() it, carry it along.
  torch::Tensor tied_;
};

class BertEmbedding : public NetworkBlock {
 public:
  explicit BertEmbedding(const TransformerSpec& spec);
  torch::Tensor forward(torch::Tensor ids) override;
  void initialize(SplitMix64& g) override;

 private:
  TransformerSpec spec_;
  torch::nn::Embedding word_{nullptr}, position_{nullptr}, type_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};

class BertLayer : public NetworkBlock {
 public:
  explicit BertLayer(const TransformerSpec& spec);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  TransformerSpec spec_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr}, attnOut_{nullptr};
  torch::nn::Linear intermediate_{nullptr}, output_{nullptr};
  torch::nn::LayerNorm attnNorm_{nullptr}, outNorm_{nullptr};
};

class BertHead : public NetworkBlock {
 public:
  explicit BertHead(const TransformerSpec& spec);
  torch::Tensor forward(torch::Tensor x) override;
  void initialize(SplitMix64& g) override;

 private:
  torch::nn::Linear pooler_{nullptr}, classifier_{nullptr};
};

// Multi-head scaled dot-product attention of q, k, v [B, T, hidden] with plain matrix products
// and softmax (what a Python rebuild writes the same way); `causal` masks future positions.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int heads,
                        bool causal);

}  // namespace tpb
