// Fft — the discrete Fourier transform of one length, planned once and run
// on many lines, in f64.
//
//   weir::Fft fft(12);
//   std::vector<std::complex<double>> line(12), scratch;  // the signal; scratch space
//   fft.transform(line.data(), /*inverse=*/false, scratch);  // X[k] = sum_j x[j] e^{-2 pi i jk/12}
//
// A power-of-two length runs the iterative radix-2 Cooley-Tukey algorithm;
// any other length runs Bluestein's chirp-z algorithm, which rewrites the
// transform as a circular convolution computed with radix-2 transforms of a
// power of two at least 2n - 1, so every length costs O(n log n). The inverse
// uses e^{+2 pi i jk/n} and is not scaled (callers divide by n). Twiddles and
// chirps are computed once per plan from exact angles (k^2 reduced mod 2n).
// A plan is read-only after construction: threads may share one, each with
// its own scratch vector.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

namespace weir {

class Fft {
 public:
  // Throws weir::Error(kInvalidArgument) for a length below 1.
  explicit Fft(int64_t length);

  int64_t length() const { return length_; }
  // Transforms `length()` values in place; `scratch` is resized as needed.
  void transform(std::complex<double>* data, bool inverse, std::vector<std::complex<double>>& scratch) const;

 private:
  // The forward radix-2 transform of radix2_size_ values.
  void radix2(std::complex<double>* data) const;
  void forward(std::complex<double>* data, std::vector<std::complex<double>>& scratch) const;

  int64_t length_;
  int64_t radix2_size_;                         // length_ itself, or Bluestein's power of two
  std::vector<std::complex<double>> twiddles_;  // e^{-2 pi i k / radix2_size_}, k < radix2_size_ / 2
  // Bluestein: chirp_[k] = e^{-pi i k^2 / n}, and the radix-2 transform of
  // the convolution kernel conj(chirp) laid out circularly over radix2_size_,
  // divided by radix2_size_ (the inverse transform's scale, applied once here).
  std::vector<std::complex<double>> chirp_;
  std::vector<std::complex<double>> kernel_spectrum_;
};

}  // namespace weir
