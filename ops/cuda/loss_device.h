// The device side of the CUDA loss kernels (loss_device.cu): launchers with
// plain arguments; the OpKernels are loss_kernels.cc. Every sum (a
// position's softmax, the reduced loss, the mean's total weight) is in f64,
// as on the CPU, and reduced by fixed trees (deterministic_sum.cuh): the
// same inputs give the same bits on every run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/elementwise_device.h"
#include "ops/loss/loss_reduction.h"

namespace weir::cuda {

using weir::LossReduction;

// scores (or, for the backward ops, the reference) [n, c, inner...] with
// labels [n, inner...]: n * inner positions, each over c classes.
struct ClassLossProblem {
  ElementType type = ElementType::kFloat32;
  const void* scores = nullptr;
  const void* labels = nullptr;
  bool labels_int64 = true;     // else i32
  const void* weights = nullptr;  // [c] of `type`; nullptr: every class weighs 1
  int64_t n = 0, c = 0, inner = 1;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
  LossReduction reduction = LossReduction::kMean;
};

// The label check: bad_label[0] is the first position whose label is
// outside [0, c) and not ignore_index (INT64_MAX when there is none), and
// bad_label[1] that label. Such a position counts with weight 0 and its
// label is never used as an index, so the kernels read nothing out of
// bounds; the OpKernel reads the two values back and fails the node.
size_t class_loss_workspace_doubles(const ClassLossProblem& problem);

// SoftmaxCrossEntropyLoss (`softmax`) or NegativeLogLikelihoodLoss: `loss`
// labels-shaped for none, else one element; `log_prob` (scores-shaped, may
// be nullptr) the log-softmax. Both of `type`.
void launch_class_loss(bool softmax, const ClassLossProblem& problem, void* loss, void* log_prob, double* workspace,
                       int64_t* bad_label, cudaStream_t stream);

// Their backward ops: dx (scores-shaped) from dy (one element, or one per
// position for none) and `problem.scores` holding log_prob (cross entropy)
// or the input (negative log-likelihood).
void launch_class_loss_grad(bool softmax, const ClassLossProblem& problem, const void* dy, void* dx, double* workspace,
                            int64_t* bad_label, cudaStream_t stream);

// MeanSquaredError over `count` prediction elements, the target read at
// `indexing.stride_b` offsets (broadcast to the prediction); `loss` has
// `count` elements for none, else one.
size_t mean_squared_error_workspace_doubles(int64_t count);
void launch_mean_squared_error(ElementType type, const void* prediction, const void* target,
                               const BroadcastIndexing& indexing, int64_t count, LossReduction reduction, void* loss,
                               double* workspace, cudaStream_t stream);
// dx = 2 (prediction - target) dy, over count for mean (count > 0).
void launch_mean_squared_error_grad(ElementType type, const void* dy, const void* prediction, const void* target,
                                    const BroadcastIndexing& indexing, int64_t count, LossReduction reduction, void* dx,
                                    cudaStream_t stream);

}  // namespace weir::cuda
