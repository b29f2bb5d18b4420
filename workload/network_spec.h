// workload/network_spec.h — what a run trains, without LibTorch: the workload's spec (the MLP of
// today, a ResNet-style CNN, a GPT-2-style decoder or a BERT-style encoder, sized or one of the
// published presets), its one-line spelling on the command line and in records (--workload), and
// its cost from the spec alone (parameters, gradient bytes, FLOPs and activations per sample), so
// the command line, the checks before launch and the records need no network built.
//
// --workload NAME[:KEY=VALUE]... (canonical text in records: keys in a fixed order, a preset's only
// where they differ from it):
//   mlp                       the MLP 784-(--hidden)-10 on --dataset (the default; no keys)
//   resnet                    a ResNet-style CNN: depth=10|18|34|50|101|152 (10), width=C (16),
//                             image=mnist|cifar|imagenet (mnist: 1x28x28 from --dataset, 10 classes;
//                             cifar: 3x32x32, 10 classes; imagenet: 3x224x224, 1000 classes, the
//                             7x7/2 stem and max-pool; cifar and imagenet images are generated),
//                             res=PIXELS (the image's), classes=K, norm=group|batch (group)
//   resnet18, resnet50        torchvision's layer shapes on imagenet images (norm=batch as published
//                             unless norm=group; res may be reduced on the CPU)
//   gpt                       a decoder-only LM: layers=L (2), hidden=H (128), heads=A (4),
//                             ffn=F (4H), vocab=V (1024), seq=T (64) on generated token chains
//   bert                      an encoder classifier: the same keys, and classes=K (2)
//   gpt2-small, gpt2-medium   GPT-2's shapes (seq may be cut below 1024 on the CPU)
//   bert-base, bert-large     BERT's shapes (seq may be cut below 512)
// A preset takes only res, seq and norm: its layer shapes are the published ones; size a network
// with its kind's keys instead.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tpb {

enum class NetworkKind { Mlp, Resnet, Gpt, Bert };

// How a ResNet normalises after each convolution. BatchNorm2d is the published choice; its
// statistics depend on the batch a rank sees, so data-parallel training matches single-device
// training at the global batch only without it: GroupNorm (same parameter count) does.
enum class ConvNorm { Batch, Group };

struct ResnetSpec {
  int depth = 18;                            // what stageBlocks came from (resnetStageBlocks); 0: by hand
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

// The MLP of workload/model.h: 784 inputs (an MNIST-shaped image), --hidden's widths, 10 classes.
struct MlpSpec {
  std::vector<int> hidden{512, 512};
};

struct NetworkSpec {
  NetworkKind kind = NetworkKind::Mlp;
  std::string name = "mlp";  // the preset's name, or "mlp", "resnet", "gpt", "bert" for a sized one
  MlpSpec mlp;
  ResnetSpec resnet;
  TransformerSpec transformer;
  // A resnet trained on the run's --dataset (synthetic MNIST look-alike or MNIST's IDX files),
  // its images seen as 1x28x28; otherwise a network's data is generated (workload/network_data.h).
  bool mnistImages = false;
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
// Sizes are bounded so that no product of them overflows before a memory check can refuse it.
std::string networkProblem(const NetworkSpec& spec);


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
// The evaluation's batch for a network whose sample keeps `activationBytesPerSample` for backward
// (NetworkCost::activationBytes) and trains at `trainBatch`: kMaxEvalBatch samples, fewer where
// their activations would pass kEvalActivationBytes, never fewer than the training batch. An
// evaluation keeps no activations for backward, so at most a training step's (which the memory
// check before launch counts) or kEvalActivationBytes: GPT-2 small at sequence 1024 evaluates at
// the training batch, not 1000 samples (50 GB of attention scores).
constexpr std::size_t kMaxEvalBatch = 1000;
constexpr double kEvalActivationBytes = 256.0 * 1024 * 1024;
std::size_t evalBatchSize(double activationBytesPerSample, int trainBatch);

// The same per block of the network as workload/network.h builds it (the MLP: per Linear layer),
// in order; networkCost() is their sum. The tied LM head counts its weight in the embeddings
// only, and its multiply in the head.
std::vector<NetworkCost> networkBlockCosts(const NetworkSpec& spec);

// --workload's value as a spec; `hidden` is --hidden (the MLP's widths). Throws UsageError naming
// `flag` on anything it cannot build: an unknown name or key, a key given twice or to a preset
// that keeps it, a number that is not plain decimal or out of its range, or what
// networkProblem() says.
NetworkSpec parseWorkload(const std::string& flag, const std::string& text, const std::string& hidden);

// The canonical spelling (parseWorkload(workloadText(s)) == s): "mlp", "gpt2-small:seq=128",
// "resnet:depth=10:width=16:image=mnist:res=28:classes=10:norm=group".
std::string workloadText(const NetworkSpec& spec);

// The names --workload accepts, for --help and errors.
std::string workloadChoices();

// The input one sample carries, in bytes as the dataset holds it (float32 pixels, int64 tokens
// with their targets), for memory checks and default data sizes.
double sampleBytes(const NetworkSpec& spec);

// The generated data's sizes when --train_size is 0, and its test set's: as many samples as fit
// in 256 MiB (training) and 32 MiB (test), at least 64 and 32, at most 60000 and 10000 (MNIST's).
// The test set, evaluated after every epoch, is also cut to kEvalForwardFlops of forward passes
// (at least kLeastTestSamples): GPT-2 small's forward at sequence 1024 is about 292 GFLOP a
// sample, so its 4096 samples of 32 MiB would take hours on a CPU; it evaluates 8.
constexpr double kEvalForwardFlops = 2e12;
constexpr std::size_t kLeastTestSamples = 8;
std::size_t workloadTrainSize(const NetworkSpec& spec);
std::size_t workloadTestSize(const NetworkSpec& spec);

}  // namespace tpb
