// Data-dependent selection ops (ONNX opsets 11 and 13): schemas, gradient
// rules and CPU kernels. Their output sizes depend on the input's values, so
// inference gives those axes symbolic dims ("<node>:<axis>"), or static sizes
// when the deciding input is a constant.
//
// - Compress(input, condition) keeps the slices along `axis` whose condition
//   entry is true (NumPy's compress); without `axis` the input is flattened
//   first. A condition shorter than the axis leaves the rest out; a true
//   entry past the axis is an error. Gradient: CompressGrad(dY, input,
//   condition) scatters dY back into zeros of the input's shape.
// - NonZero(X) is the i64 [rank, count] coordinates of X's non-zero elements
//   in row-major order (NaN is non-zero; a scalar gives [0, count]).
// - Unique(X) gives the distinct elements (or, with `axis`, the distinct
//   slices along it, compared lexicographically in row-major order) as Y,
//   sorted ascending (sorted=1) or in order of first occurrence; then the i64
//   index of each one's first occurrence, each input element's (slice's)
//   position in Y, and each one's count. NaN sorts last and equals NaN.
//   No gradient rule.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_selection_schemas(OpRegistry& registry);
void register_selection_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
