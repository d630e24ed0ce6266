// The element types the CUDA elementwise kernels take, and the device
// enum of a DType, for the OpKernels of ops/cuda (host code).
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/kernel.h"

namespace weir::cuda {

// f32, f16 and bf16: the 16-bit types compute in f32, as on the CPU.
inline const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// The device enum of `dtype`; fails naming the node for a type the kernels
// do not take.
inline ElementType element_type(const KernelContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ElementType::kFloat32;
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
    default: ctx.fail("the CUDA kernel takes f32, f16 or bf16, got " + std::string(dtype_name(dtype)));
  }
}

// The same for tensor `t`, whose type and shape the failure names.
inline ElementType element_type(const KernelContext& ctx, const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: return ElementType::kFloat32;
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
    default: ctx.fail("the CUDA kernel takes f32, f16 or bf16, got " + t.type_string());
  }
}

// The device enum of a dtype already checked to be one of kFloatTypes.
inline ElementType checked_element_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
    default: return ElementType::kFloat32;
  }
}

}  // namespace weir::cuda
