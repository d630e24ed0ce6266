// Flush-to-zero for the kernels' floating-point arithmetic.
//
//   weir::ScopedFlushDenormals ftz;   // this thread, until the end of the scope
//
// Subnormal floats (below ~1e-38 in f32) cost up to a hundred times a
// normal operation on x86. Training makes them: squared gradients in Adam's
// second moment, activations decaying towards zero. Like other frameworks'
// executors, Weir runs kernels with FTZ and DAZ set (subnormal results and
// inputs read as zero), which changes results only below the smallest
// normal float. A no-op on other architectures.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace weir {

class ScopedFlushDenormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  // Bits 15 (flush to zero) and 6 (denormals are zero) of MXCSR.
  static constexpr unsigned kFlags = 0x8040;
  ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlags); }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#else
  ScopedFlushDenormals() = default;
#endif

 public:
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;
};

}  // namespace weir
