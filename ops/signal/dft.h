// DFT and STFT (ONNX opset 17): schemas and CPU kernels.
//
// DFT(input, dft_length?) transforms along `axis` (default 1; negative counts
// from the end, the last axis excluded) a signal stored as [..., 1] (real) or
// [..., 2] (real, imaginary), into [..., 2]. dft_length zero-pads or
// truncates the axis; `inverse` uses e^{+2 pi i jk/n} and divides by n;
// `onesided` keeps bins 0 .. n/2 (real, forward input only: the other bins
// are their conjugates).
//
// STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?)
// transforms frames signal[b, f*frame_step .. f*frame_step + n) times the
// window into [batch, frames, bins, 2]: n is frame_length or the window's
// length (both given: they must agree), frames = (length - n) / frame_step
// + 1, bins = n / 2 + 1 when `onesided` (the default), else n.
//
// Both run ops/signal/fft.h (radix-2, Bluestein for other lengths) in f64,
// whatever the tensors' type. No gradient rules.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_dft_schemas(OpRegistry& registry);
void register_dft_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
