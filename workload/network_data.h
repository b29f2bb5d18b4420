// workload/network_data.h — deterministic synthetic data for workload/network.h's networks,
// shaped by their spec, bit-identical for a given seed on every machine (SplitMix64, integer
// arithmetic and single float operations only), sample i of a split drawn from its own stream
// (seed, split, i) so the first K samples do not depend on how many are made.
//   resnet: images [n, inChannels, resolution, resolution] float32 and labels [n] int64. Each
//           class has a prototype: a 7 x 7 grid per channel of N(0, 1) values, each cell
//           stretched over resolution/7 pixels. A sample is its class's prototype shifted
//           circularly by up to 2 pixels each way, plus N(0, 1) noise per pixel: learnable from
//           local patterns, not from one pixel.
//   gpt:    tokens [n, seqLen] int64 and targets [n, seqLen] int64 (the tokens shifted by one).
//           Sequences come from one seeded Markov chain: each token has 4 likely successors
//           (drawn once per seed); the next token is one of them with probability 3/4, else
//           uniform. A model that learns the successors lowers the loss from ln(vocab) towards
//           the chain's entropy.
//   bert:   tokens [n, seqLen] int64 and labels [n] int64: class c's sequences come from its own
//           chain (successors drawn per class), and its uniform draws only take tokens congruent
//           to c modulo the classes, so both the pairs and the bag of tokens tell the class.
// Returned as workload/dataset.h's Dataset: `images` holds the inputs (images or tokens).
#pragma once

#include <cstddef>
#include <cstdint>

#include "workload/dataset.h"
#include "workload/network.h"

namespace tpb {

// The first nTrain training and nTest test samples for `spec` (checked by networkProblem()).
DataSplit makeNetworkData(const NetworkSpec& spec, std::size_t nTrain, std::size_t nTest, std::uint64_t seed);

}  // namespace tpb
