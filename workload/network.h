// workload/network.h — networks beyond the MLP: a ResNet-style CNN, a decoder-only transformer
// language model (GPT-2's layout) and a transformer encoder (BERT's layout), each built from a
// spec of kind and sizes, plus presets with the layer shapes of the published architectures.
//
// A network is an ordered list of blocks and its forward runs them in order, so a pipeline can
// cut it into stages by block ranges (as workload/stages.h cuts the MLP by layers). Blocks:
//   resnet: stem (conv, norm, ReLU[, max-pool]), one block per residual block, head (global
//           average pool, Linear to the classes);
//   gpt:    embeddings (token + position), one block per decoder layer, head (final LayerNorm and
//           the LM head, which multiplies by the token embedding's weight: tied);
//   bert:   embeddings (token + position + token type, LayerNorm), one block per encoder layer,
//           head (pooler: Linear + tanh on the first token, then a Linear classifier).
// Inputs: resnet takes float32 images [B, C, H, W] and returns logits [B, classes]; gpt takes
// int64 tokens [B, T] and returns next-token logits [B, T, vocab]; bert takes int64 tokens
// [B, T] and returns class logits [B, classes]. No dropout anywhere: it adds no parameters and
// would make runs depend on LibTorch's generator.
//
// Weights are drawn from SplitMix64 like makeModel()'s (workload/model.h): one stream, parameter
// after parameter in registration order, each row-major, so the same seed gives bit-identical
// weights in every process and a Python rebuild can draw the same values.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpb {

class SplitMix64;

enum class NetworkKind { Resnet, Gpt, Bert };

// How a ResNet normalises after each convolution. BatchNorm2d is the published choice; its
// statistics depend on the batch a rank sees, so data-parallel training matches single-device
// training at the global batch only without it: GroupNorm (same parameter count) does.
enum class ConvNorm { Batch, Group };

struct ResnetSpec {
  std::vector<int> stageBlocks{2, 2, 2, 2};  // residual blocks per stage; stage s>0 halves H and W
  bool bottleneck = false;                   // 1x1-3x3-1x1 blocks with expansion 4 (ResNet-50+)
  int width = 64;                            // channels of the stem and of stage 0 (x2 per stage)
  int inChannels = 3;
  int resolution = 224;       // square input, H = W
  int classes = 1000;
  bool imagenetStem = true;   // 7x7/2 conv + 3x3/2 max-pool; false: 3x3/1 conv (CIFAR, MNIST)
  ConvNorm norm = ConvNorm::Batch;
};

struct TransformerSpec {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int ffn = 0;          // feed-forward width; 0 means 4 x hidden
  int vocab = 50257;
  int positions = 1024; // position embeddings (the longest sequence the network accepts)
  int seqLen = 1024;    // sequence length trained on (<= positions; may be cut on the CPU)
  int tokenTypes = 2;   // bert only
  int classes = 2;      // bert only: the classifier's outputs
  int ffnWidth() const { return ffn > 0 ? ffn : 4 * hidden; }
};

struct NetworkSpec {
  NetworkKind kind = NetworkKind::Resnet;
  std::string name;  // the preset's name, or "resnet", "gpt", "bert" for a sized one
  ResnetSpec resnet;
  TransformerSpec transformer;
};

// Blocks per stage of torchvision's ResNet of that depth: 18, 34 (basic), 50, 101, 152
// (bottleneck), plus 10 ({1,1,1,1}, basic) for a small CPU network. Sets `bottleneck`.
// Throws UsageError naming the depths it knows.
std::vector<int> resnetStageBlocks(int depth, bool& bottleneck);

// "resnet18", "resnet50" (ImageNet: 3x224x224, 1000 classes), "bert-base", "bert-large"
// (vocab 30522, 512 positions, 2 token types, 2 classes), "gpt2-small", "gpt2-medium"
// (vocab 50257, 1024 positions). Throws UsageError listing the names.
NetworkSpec networkPreset(const std::string& name);
const std::vector<std::string>& networkPresetNames();

// "" when `spec` can be built, else the one-line reason (a size not positive, hidden not a
// multiple of heads, seqLen beyond positions, a resolution too small for the stages).
std::string networkProblem(const NetworkSpec& spec);

// One block of a network: a module whose forward maps the previous block's output to its own.
class NetworkBlock : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // Draws this block's parameters from `g` in registration order (see the file comment).
  virtual void initialize(SplitMix64& g) = 0;
};

class NetworkImpl : public torch::nn::Module {
 public:
  explicit NetworkImpl(const NetworkSpec& spec);  // throws UsageError if networkProblem() says so
  torch::Tensor forward(torch::Tensor x) { return forwardBlocks(x, 0, blockCount()); }
  // Blocks [begin, end) in order: what one pipeline stage runs.
  torch::Tensor forwardBlocks(torch::Tensor x, std::size_t begin, std::size_t end);
  std::size_t blockCount() const { return blocks_.size(); }
  NetworkBlock& block(std::size_t i) { return *blocks_.at(i); }
  const NetworkSpec& spec() const { return spec_; }

 private:
  void add(std::shared_ptr<NetworkBlock> block);
  NetworkSpec spec_;
  std::vector<std::shared_ptr<NetworkBlock>> blocks_;
};
TORCH_MODULE(Network);

// Builds `spec` on the CPU with weights from SplitMix64(seed). Initial distributions: resnet as
// torchvision (conv: Kaiming normal, fan_out, ReLU gain; norm: weight 1, bias 0; the final
// Linear: PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias); gpt as
// GPT-2 (Linear and embedding weights N(0, 0.02), biases 0, LayerNorm 1 and 0, the residual
// output projections N(0, 0.02/sqrt(2 layers))); bert as BERT (initializer_range 0.02: Linear and
// embedding weights N(0, 0.02), biases 0, LayerNorm 1 and 0). Normal draws are a sum of six
// uniforms (bounded at 4.2 sigma), made of integer arithmetic so they are the same everywhere.
Network makeNetwork(const NetworkSpec& spec, std::uint64_t seed);

// The parameters in registration order: block 0's, then block 1's, ... The order gradients are
// laid out in (FlatGrads); it must never change. The tied LM head is listed once, as the token
// embedding's weight in block 0 (the head block holds it without registering it).
std::vector<torch::Tensor> orderedParameters(Network& network);

// What a memory check and a record need, per sample, computed from the spec alone (no network
// is built, so the big presets cost nothing):
//   parameters:      trainable scalars (tied weights once; BatchNorm's running statistics are
//                    buffers, not parameters);
//   gradientBytes:   parameters x 4 (float32 gradients);
//   forwardFlops:    2 x multiply-adds of every convolution and matrix product (Linear layers,
//                    attention's QK^T and AV, the LM head) for one sample; norms, activations,
//                    softmax and pooling are left out (a few percent);
//   trainFlops:      3 x forwardFlops (backward computes the gradients of the inputs and of the
//                    weights, each costing about a forward);
//   activationBytes: float32 tensors autograd keeps for backward for one sample, without
//                    recomputation: resnet: the image, each conv's output twice (the norm's
//                    input and the ReLU's output, which the next conv keeps as its input) and
//                    each block's output; transformer, per token and layer: 8 x hidden + 2 x ffn
//                    + heads x seqLen floats (the two norms' inputs, the inputs of the QKV, output
//                    and FFN projections, Q, K, V, GELU's input and output, the attention
//                    probabilities), plus the embeddings' output and the head's (for gpt the
//                    vocabulary's log-probabilities per token).
struct NetworkCost {
  std::size_t parameters = 0;
  std::size_t gradientBytes = 0;
  double forwardFlops = 0;
  double trainFlops = 0;
  double activationBytes = 0;
};
NetworkCost networkCost(const NetworkSpec& spec);

// The training loss of a batch: mean cross-entropy over the samples (resnet, bert: output
// [B, classes], targets [B]) or over every position's next token (gpt: output [B, T, vocab],
// targets [B, T]).
torch::Tensor networkLoss(const NetworkSpec& spec, const torch::Tensor& output, const torch::Tensor& targets);

}  // namespace tpb
