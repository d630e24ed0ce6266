// MelWeightMatrix (ONNX opset 17): schema and CPU kernel.
//
// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
// upper_edge_hertz) -> [dft_length / 2 + 1, num_mel_bins]: column i is a
// triangle over the spectrogram bins, rising from 0 at edge i to 1 at edge
// i + 1 and falling to 0 at edge i + 2. The num_mel_bins + 2 edges are equally
// spaced on the mel scale mel(f) = 2595 log10(1 + f / 700), from
// mel(lower_edge_hertz) in steps of (mel(upper) - mel(lower)) / (num_mel_bins
// + 2) (the ONNX reference's spacing), each taken back to hertz and to the
// spectrogram bin floor((dft_length + 1) f / sample_rate). A triangle whose
// rising edges meet puts 1 at its centre. Rows past the last spectrogram bin
// (an upper edge at the Nyquist frequency of an odd dft_length reaches one)
// are dropped. Computed in f64, stored as `output_datatype` (f32 by default).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_mel_weight_matrix_schema(OpRegistry& registry);
void register_mel_weight_matrix_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
