// ONNX's random-number ops: schemas, (empty) gradient rules and CPU kernels.
//
//   RandomUniform()            -> [shape] of `dtype` (f32 default), uniform in [low, high)
//   RandomNormal()             -> [shape] of `dtype`, normal with `mean` and standard deviation `scale`
//   RandomUniformLike(input)   -> input's shape; `dtype`, else input's (which must then be floating)
//   RandomNormalLike(input)    -> the same
//   Bernoulli(p)               -> p's shape; 1 with probability p[i], else 0; `dtype`, else p's
//   Multinomial(logits [B, C]) -> [B, sample_size] class indices (i32 default, i64), drawn from
//                                 softmax(logits[b]) (unnormalized log-probabilities)
//
// The draws come from the counter-based SplitMix64 stream Dropout uses
// (core/splitmix.h): element i takes position i of a sequence whose start is
// keyed by
//   - the `seed` attribute alone when the node has one (ONNX declares it a
//     float): every run, session and thread count gives the same values;
//   - otherwise the node (its name and output's name) and the run's counter
//     (KernelContext::rng_counter, which a Session advances per run and can
//     restore; a kernel run outside one counts its own runs): each run draws
//     afresh, two unseeded nodes of one run differ, and a run replays from
//     the Session's saved RNG state.
// Normals are Box-Muller pairs (elements 2j and 2j + 1 share one pair).
//
// Values: uniform draws rounded to the output type stay in [low, high)
// (a draw that rounds up to `high` takes the largest value below it); high
// < low, a negative scale, non-finite parameters or a negative shape entry
// are errors. Bernoulli gives exactly 0 for p = 0 and exactly 1 for p = 1;
// a probability outside [0, 1] (or NaN) is an error naming the element.
// Multinomial's rows need no normalization; -inf is probability 0; a NaN or
// +inf logit, or a row with no finite logit, is an error naming the row.
//
// All are kStateful, so constant folding and CSE leave them alone.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_random_schemas(OpRegistry& registry);
void register_random_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
