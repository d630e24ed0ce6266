#include "ops/cuda/loss_device.h"

#include <cstdint>

#include "ops/cuda/deterministic_sum.cuh"
#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

namespace {

// A block per position; positions with a few classes leave most threads
// idle, which costs little next to launching per position.
constexpr int kLineThreads = 128;
constexpr int kReduceThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
constexpr int64_t kNoBadLabel = INT64_MAX;

int blocks_for(int64_t wanted) { return static_cast<int>(wanted < kMaxBlocks ? wanted : kMaxBlocks); }

// What the CPU's write_doubles stores: f64 -> the compute type (f32) -> T.
template <typename T>
__device__ inline T store_double(double value) {
  return store<T>(static_cast<float>(value));
}

template <typename T, typename Label>
struct ClassLossArgs {
  const T* scores;
  const Label* labels;
  const T* weights;
  int64_t c, inner, positions;
  bool has_ignore_index;
  int64_t ignore_index;
  LossReduction reduction;
};

template <typename T, typename Label>
ClassLossArgs<T, Label> args_of(const ClassLossProblem& problem) {
  return {static_cast<const T*>(problem.scores), static_cast<const Label*>(problem.labels),
          static_cast<const T*>(problem.weights), problem.c, problem.inner, problem.n * problem.inner,
          problem.has_ignore_index, problem.ignore_index, problem.reduction};
}

// ClassBatch::weight of the CPU kernel: 0 when ignored; a label outside
// [0, c) is recorded in bad_label[0] (the smallest such position wins, as
// the CPU's loop in position order stops at the first) and weighs 0.
// `bad_label` may be nullptr where another thread records the position.
template <typename T, typename Label>
__device__ double position_weight(const ClassLossArgs<T, Label>& a, int64_t position, int64_t* bad_label) {
  const int64_t label = a.labels[position];
  if (a.has_ignore_index && label == a.ignore_index) return 0.0;
  if (label < 0 || label >= a.c) {
    if (bad_label != nullptr) {
      atomicMin(reinterpret_cast<unsigned long long*>(bad_label), static_cast<unsigned long long>(position));
    }
    return 0.0;
  }
  return a.weights != nullptr ? static_cast<double>(load(a.weights[label])) : 1.0;
}

__global__ void reset_bad_label(int64_t* bad_label) {
  bad_label[0] = kNoBadLabel;
  bad_label[1] = 0;
}

template <typename Label>
__global__ void describe_bad_label(const Label* labels, int64_t* bad_label) {
  if (bad_label[0] != kNoBadLabel) bad_label[1] = labels[bad_label[0]];
}

// Offset of (position, class) in scores: ClassBatch::at.
__device__ inline int64_t base_of(int64_t position, int64_t c, int64_t inner) {
  return position / inner * c * inner + position % inner;
}

// Per position (a block each): the log-softmax shift (max + log sum exp),
// log_prob, and the loss -w * log_prob[label]: into `loss` for none, else
// into workspace (losses, then weights) for the reduction.
template <typename T, typename Label>
__global__ void softmax_cross_entropy_positions(ClassLossArgs<T, Label> a, T* loss, T* log_prob, double* workspace,
                                                int64_t* bad_label) {
  for (int64_t p = blockIdx.x; p < a.positions; p += gridDim.x) {
    const int64_t base = base_of(p, a.c, a.inner);
    // The label's score is read before any log_prob is written: log_prob
    // may be the scores' own memory where the runtime runs the node in place.
    double w = 0, source = 0;
    if (threadIdx.x == 0) {
      w = position_weight(a, p, bad_label);
      if (w != 0) source = static_cast<double>(load(a.scores[base + static_cast<int64_t>(a.labels[p]) * a.inner]));
    }
    double max = -INFINITY;
    for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) max = fmax(max, static_cast<double>(load(a.scores[base + j * a.inner])));
    max = block_max<kLineThreads>(max);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) {
      sum = dadd(sum, exp(dsub(static_cast<double>(load(a.scores[base + j * a.inner])), max)));
    }
    sum = block_sum<kLineThreads>(sum);
    const double shift = dadd(max, log(sum));
    if (log_prob != nullptr) {
      for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) {
        const int64_t at = base + j * a.inner;
        log_prob[at] = store_double<T>(dsub(static_cast<double>(load(a.scores[at])), shift));
      }
    }
    if (threadIdx.x == 0) {
      const double value = w != 0 ? dmul(-w, dsub(source, shift)) : 0.0;
      if (a.reduction == LossReduction::kNone) {
        loss[p] = store_double<T>(value);
      } else {
        workspace[p] = value;
        workspace[a.positions + p] = w;
      }
    }
  }
}

// NegativeLogLikelihoodLoss needs no reduction per position: a thread each.
template <typename T, typename Label>
__global__ void nll_positions(ClassLossArgs<T, Label> a, T* loss, double* workspace, int64_t* bad_label) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < a.positions; p += stride) {
    const double w = position_weight(a, p, bad_label);
    const int64_t at = base_of(p, a.c, a.inner) + (w != 0 ? static_cast<int64_t>(a.labels[p]) * a.inner : 0);
    const double value = w != 0 ? dmul(-w, static_cast<double>(load(a.scores[at]))) : 0.0;
    if (a.reduction == LossReduction::kNone) {
      loss[p] = store_double<T>(value);
    } else {
      workspace[p] = value;
      workspace[a.positions + p] = w;
    }
  }
}

// One block: the summed loss, over the summed weight for mean.
template <typename T>
__global__ void reduce_losses(const double* workspace, int64_t positions, bool mean, T* loss) {
  double sum = 0, weight = 0;
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
    sum = dadd(sum, workspace[p]);
    weight = dadd(weight, workspace[positions + p]);
  }
  sum = block_sum<kReduceThreads>(sum);
  weight = block_sum<kReduceThreads>(weight);
  if (threadIdx.x == 0) *loss = store_double<T>(mean ? sum / weight : sum);
}

// One block: the mean's denominator, the total weight of the positions.
template <typename T, typename Label>
__global__ void total_weight(ClassLossArgs<T, Label> a, double* total, int64_t* bad_label) {
  double weight = 0;
  for (int64_t p = threadIdx.x; p < a.positions; p += blockDim.x) weight = dadd(weight, position_weight(a, p, bad_label));
  weight = block_sum<kReduceThreads>(weight);
  if (threadIdx.x == 0) *total = weight;
}

// Per position: dx = g (exp(log_prob) - onehot) for cross entropy, -g at
// the label for negative log-likelihood, 0 for a position weighing 0; g =
// dy * w (/ total weight for mean).
template <typename T, typename Label, bool kSoftmax>
__global__ void class_loss_grad_positions(ClassLossArgs<T, Label> a, const T* dy, T* dx, const double* total,
                                          int64_t* bad_label) {
  const double scale = a.reduction == LossReduction::kMean ? 1.0 / *total : 1.0;
  for (int64_t p = blockIdx.x; p < a.positions; p += gridDim.x) {
    const int64_t base = base_of(p, a.c, a.inner);
    // Every thread evaluates the weight; thread 0 records a bad label.
    const int64_t label = a.labels[p];
    const double w = position_weight(a, p, threadIdx.x == 0 ? bad_label : nullptr);
    const double g = w == 0 ? 0.0
                            : dmul(dmul(static_cast<double>(load(dy[a.reduction == LossReduction::kNone ? p : 0])), w), scale);
    for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) {
      const int64_t at = base + j * a.inner;
      double value = 0;
      if (w != 0) {
        if constexpr (kSoftmax) {
          value = dmul(g, dsub(exp(static_cast<double>(load(a.scores[at]))), j == label ? 1.0 : 0.0));
        } else {
          value = j == label ? -g : 0.0;
        }
      }
      dx[at] = store_double<T>(value);
    }
  }
}

template <typename T, typename Label>
void class_loss_as(bool softmax, const ClassLossProblem& problem, void* loss, void* log_prob, double* workspace,
                   int64_t* bad_label, cudaStream_t stream) {
  const ClassLossArgs<T, Label> a = args_of<T, Label>(problem);
  reset_bad_label<<<1, 1, 0, stream>>>(bad_label);
  if (a.positions > 0) {
    if (softmax) {
      softmax_cross_entropy_positions<T, Label><<<blocks_for(a.positions), kLineThreads, 0, stream>>>(
          a, static_cast<T*>(loss), static_cast<T*>(log_prob), workspace, bad_label);
    } else {
      nll_positions<T, Label><<<blocks_for((a.positions + kReduceThreads - 1) / kReduceThreads), kReduceThreads, 0, stream>>>(
          a, static_cast<T*>(loss), workspace, bad_label);
    }
  }
  if (a.reduction != LossReduction::kNone) {
    reduce_losses<T><<<1, kReduceThreads, 0, stream>>>(workspace, a.positions, a.reduction == LossReduction::kMean,
                                                       static_cast<T*>(loss));
  }
  describe_bad_label<Label><<<1, 1, 0, stream>>>(a.labels, bad_label);
}

template <typename T, typename Label>
void class_loss_grad_as(bool softmax, const ClassLossProblem& problem, const void* dy, void* dx, double* workspace,
                        int64_t* bad_label, cudaStream_t stream) {
  const ClassLossArgs<T, Label> a = args_of<T, Label>(problem);
  reset_bad_label<<<1, 1, 0, stream>>>(bad_label);
  if (a.reduction == LossReduction::kMean) total_weight<T, Label><<<1, kReduceThreads, 0, stream>>>(a, workspace, bad_label);
  if (a.positions > 0) {
    if (softmax) {
      class_loss_grad_positions<T, Label, true><<<blocks_for(a.positions), kLineThreads, 0, stream>>>(
          a, static_cast<const T*>(dy), static_cast<T*>(dx), workspace, bad_label);
    } else {
      class_loss_grad_positions<T, Label, false><<<blocks_for(a.positions), kLineThreads, 0, stream>>>(
          a, static_cast<const T*>(dy), static_cast<T*>(dx), workspace, bad_label);
    }
  }
  describe_bad_label<Label><<<1, 1, 0, stream>>>(a.labels, bad_label);
}

// MeanSquaredError: element i's difference prediction - target in f64.
template <typename T>
__device__ inline double difference_at(const T* prediction, const T* target, const BroadcastIndexing& indexing, int64_t i) {
  int64_t rest = i, offset = 0;
  for (int axis = indexing.rank - 1; axis >= 0; --axis) {
    offset += rest % indexing.sizes[axis] * indexing.stride_b[axis];
    rest /= indexing.sizes[axis];
  }
  return dsub(static_cast<double>(load(prediction[i])), static_cast<double>(load(target[offset])));
}

// Squares: stored for none, else summed per block into partials[block] (a
// fixed grid for a given count, so the sum's order is fixed).
template <typename T>
__global__ void squared_errors(const T* prediction, const T* target, BroadcastIndexing indexing, int64_t count, T* loss,
                               double* partials) {
  double sum = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double d = difference_at(prediction, target, indexing, i);
    const double square = dmul(d, d);
    if (partials == nullptr) {
      loss[i] = store_double<T>(square);
    } else {
      sum = dadd(sum, square);
    }
  }
  if (partials == nullptr) return;
  sum = block_sum<kReduceThreads>(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

template <typename T>
__global__ void reduce_squared_errors(const double* partials, int blocks, double count, bool mean, T* loss) {
  double sum = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) sum = dadd(sum, partials[b]);
  sum = block_sum<kReduceThreads>(sum);
  if (threadIdx.x == 0) *loss = store_double<T>(mean ? sum / count : sum);
}

template <typename T>
__global__ void squared_error_grad(const T* dy, const T* prediction, const T* target, BroadcastIndexing indexing,
                                   int64_t count, LossReduction reduction, T* dx) {
  const double divisor = reduction == LossReduction::kMean ? static_cast<double>(count) : 1.0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double g = static_cast<double>(load(dy[reduction == LossReduction::kNone ? i : 0])) / divisor;
    dx[i] = store_double<T>(dmul(dmul(2.0, difference_at(prediction, target, indexing, i)), g));
  }
}

constexpr int64_t kMaxReduceBlocks = 1024;

int squared_error_blocks(int64_t count) {
  const int64_t wanted = (count + kReduceThreads - 1) / kReduceThreads;
  return static_cast<int>(wanted < kMaxReduceBlocks ? wanted : kMaxReduceBlocks);
}

template <typename T>
void mse_as(const void* prediction, const void* target, const BroadcastIndexing& indexing, int64_t count,
            LossReduction reduction, void* loss, double* workspace, cudaStream_t stream) {
  const T* p = static_cast<const T*>(prediction);
  const T* t = static_cast<const T*>(target);
  const int blocks = squared_error_blocks(count);
  if (reduction == LossReduction::kNone) {
    if (count > 0) squared_errors<T><<<blocks, kReduceThreads, 0, stream>>>(p, t, indexing, count, static_cast<T*>(loss), nullptr);
    return;
  }
  if (count > 0) squared_errors<T><<<blocks, kReduceThreads, 0, stream>>>(p, t, indexing, count, nullptr, workspace);
  reduce_squared_errors<T><<<1, kReduceThreads, 0, stream>>>(workspace, blocks, static_cast<double>(count),
                                                             reduction == LossReduction::kMean, static_cast<T*>(loss));
}

template <typename T>
void mse_grad_as(const void* dy, const void* prediction, const void* target, const BroadcastIndexing& indexing,
                 int64_t count, LossReduction reduction, void* dx, cudaStream_t stream) {
  if (count == 0) return;
  squared_error_grad<T><<<squared_error_blocks(count), kReduceThreads, 0, stream>>>(
      static_cast<const T*>(dy), static_cast<const T*>(prediction), static_cast<const T*>(target), indexing, count,
      reduction, static_cast<T*>(dx));
}

}  // namespace

size_t class_loss_workspace_doubles(const ClassLossProblem& problem) {
  const int64_t positions = problem.n * problem.inner;
  return positions > 0 ? 2 * static_cast<size_t>(positions) : 1;
}

void launch_class_loss(bool softmax, const ClassLossProblem& problem, void* loss, void* log_prob, double* workspace,
                       int64_t* bad_label, cudaStream_t stream) {
  with_element_type(problem.type, [&](auto t) {
    using T = decltype(t);
    if (problem.labels_int64) {
      class_loss_as<T, int64_t>(softmax, problem, loss, log_prob, workspace, bad_label, stream);
    } else {
      class_loss_as<T, int32_t>(softmax, problem, loss, log_prob, workspace, bad_label, stream);
    }
  });
}

void launch_class_loss_grad(bool softmax, const ClassLossProblem& problem, const void* dy, void* dx, double* workspace,
                            int64_t* bad_label, cudaStream_t stream) {
  with_element_type(problem.type, [&](auto t) {
    using T = decltype(t);
    if (problem.labels_int64) {
      class_loss_grad_as<T, int64_t>(softmax, problem, dy, dx, workspace, bad_label, stream);
    } else {
      class_loss_grad_as<T, int32_t>(softmax, problem, dy, dx, workspace, bad_label, stream);
    }
  });
}

size_t mean_squared_error_workspace_doubles(int64_t count) {
  const int blocks = squared_error_blocks(count);
  return blocks > 0 ? static_cast<size_t>(blocks) : 1;
}

void launch_mean_squared_error(ElementType type, const void* prediction, const void* target,
                               const BroadcastIndexing& indexing, int64_t count, LossReduction reduction, void* loss,
                               double* workspace, cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    mse_as<decltype(t)>(prediction, target, indexing, count, reduction, loss, workspace, stream);
  });
}

void launch_mean_squared_error_grad(ElementType type, const void* dy, const void* prediction, const void* target,
                                    const BroadcastIndexing& indexing, int64_t count, LossReduction reduction, void* dx,
                                    cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    mse_grad_as<decltype(t)>(dy, prediction, target, indexing, count, reduction, dx, stream);
  });
}

}  // namespace weir::cuda
