// The contiguous loops under QuantizeLinear and DequantizeLinear for f32 and
// 8-bit data with one scale and zero point: the same results as
// saturate_round (quantization_common.h) and (q - zero) * scale, element
// for element, in loops the compiler vectorizes (AVX-512, AVX2 or SSE2,
// picked at load time).
//
//   quantize_f32(x, n, scale, zero, y_u8);        // y = saturate(round(x / scale) + zero), halves to even
//   dequantize_to_f32(q_s8, n, scale, zero, y);   // y = (q - zero) * scale
#pragma once

#include <cstdint>

namespace weir {

void quantize_f32(const float* in, int64_t count, float scale, int32_t zero_point, uint8_t* out);
void quantize_f32(const float* in, int64_t count, float scale, int32_t zero_point, int8_t* out);
void dequantize_to_f32(const uint8_t* in, int64_t count, float scale, int32_t zero_point, float* out);
void dequantize_to_f32(const int8_t* in, int64_t count, float scale, int32_t zero_point, float* out);

}  // namespace weir
