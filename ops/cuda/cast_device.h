// The device side of the CUDA Cast kernel (cast_device.cu): every element
// type to every other, with the CPU's rules (ops/cast/cast.h): float to
// integer truncates toward zero and saturates at the target's limits, NaN
// becomes 0; integer to integer wraps; anything to bool is "!= 0"; f16 and
// bf16 go through f32 and round to nearest even (so f64 -> f16 rounds twice,
// as the CPU's does).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weir::cuda {

enum class CastType { kF32, kF64, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kBool };

// out[i] = convert(in[i]) for i < count (count > 0); `from` != `to`.
void launch_cast(CastType from, const void* in, CastType to, void* out, int64_t count, cudaStream_t stream);

}  // namespace weir::cuda
