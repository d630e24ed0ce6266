// Det (ONNX opset 11): schema, gradient rule and CPU kernels.
//
// Det(X) is the determinant of each matrix of X's last two axes ([*, M, M]
// -> [*]), by LU decomposition with partial pivoting in f64 whatever X's
// dtype. The gradient is dX = dY * cofactor(X) (= det(X) inverse(X)^T when X
// is invertible), which the backward op DetGrad(dY, X) computes: through
// the LU's inverse, or, for a singular matrix, from the minors themselves.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// The determinant of the n x n row-major matrix `a` (which it overwrites with
// its LU factors; `pivots` gets the row swapped into each position).
double lu_determinant(std::vector<double>& a, int64_t n, std::vector<int64_t>& pivots);

// The cofactor matrix of the n x n row-major matrix `a`: C[i][j] =
// (-1)^(i+j) times the determinant of `a` without row i and column j.
std::vector<double> cofactor_matrix(const std::vector<double>& a, int64_t n);

void register_det_schemas(OpRegistry& registry);
void register_det_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
