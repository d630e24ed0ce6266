#include "ops/signal/fft.h"

#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "core/error.h"

namespace weir {

namespace {

using Complex = std::complex<double>;

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// e^{-2 pi i numerator / denominator}, from the exact fraction.
Complex unit_root(int64_t numerator, int64_t denominator) {
  double angle = -2.0 * std::numbers::pi * static_cast<double>(numerator) / static_cast<double>(denominator);
  return {std::cos(angle), std::sin(angle)};
}

}  // namespace

Fft::Fft(int64_t length) : length_(length), radix2_size_(length) {
  if (length < 1) throw Error(ErrorKind::kInvalidArgument, "a Fourier transform needs a length of at least 1, got " + std::to_string(length));
  if (!is_power_of_two(length)) {
    radix2_size_ = 1;
    while (radix2_size_ < 2 * length - 1) radix2_size_ *= 2;
  }
  twiddles_.resize(static_cast<size_t>(radix2_size_ / 2));
  for (int64_t k = 0; k < radix2_size_ / 2; ++k) twiddles_[static_cast<size_t>(k)] = unit_root(k, radix2_size_);
  if (radix2_size_ == length_) return;
  // Bluestein: jk = (j^2 + k^2 - (k - j)^2) / 2, so
  // X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]), a convolution.
  // k^2 mod 2n keeps the angle pi k^2 / n small and exact.
  chirp_.resize(static_cast<size_t>(length_));
  for (int64_t k = 0; k < length_; ++k) {
    int64_t square = (k * k) % (2 * length_);
    chirp_[static_cast<size_t>(k)] = unit_root(square, 2 * length_);
  }
  kernel_spectrum_.assign(static_cast<size_t>(radix2_size_), Complex(0, 0));
  kernel_spectrum_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < length_; ++k) {
    Complex value = std::conj(chirp_[static_cast<size_t>(k)]);
    kernel_spectrum_[static_cast<size_t>(k)] = value;
    kernel_spectrum_[static_cast<size_t>(radix2_size_ - k)] = value;
  }
  radix2(kernel_spectrum_.data());
  for (Complex& value : kernel_spectrum_) value /= static_cast<double>(radix2_size_);
}

void Fft::radix2(Complex* data) const {
  const int64_t n = radix2_size_;
  // Bit-reversal permutation, then butterflies of growing span.
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; (j & bit) != 0; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) std::swap(data[i], data[j]);
  }
  for (int64_t span = 1; span < n; span *= 2) {
    const int64_t stride = n / (2 * span);  // twiddle k * stride is e^{-2 pi i k / (2 span)}
    for (int64_t start = 0; start < n; start += 2 * span) {
      for (int64_t k = 0; k < span; ++k) {
        Complex t = twiddles_[static_cast<size_t>(k * stride)] * data[start + k + span];
        data[start + k + span] = data[start + k] - t;
        data[start + k] += t;
      }
    }
  }
}

void Fft::forward(Complex* data, std::vector<Complex>& scratch) const {
  if (radix2_size_ == length_) {
    radix2(data);
    return;
  }
  scratch.assign(static_cast<size_t>(radix2_size_), Complex(0, 0));
  for (int64_t k = 0; k < length_; ++k) scratch[static_cast<size_t>(k)] = data[k] * chirp_[static_cast<size_t>(k)];
  radix2(scratch.data());
  // The inverse radix-2 transform of the product, as conj(forward(conj(.))).
  for (size_t k = 0; k < scratch.size(); ++k) scratch[k] = std::conj(scratch[k] * kernel_spectrum_[k]);
  radix2(scratch.data());
  for (int64_t k = 0; k < length_; ++k) data[k] = std::conj(scratch[static_cast<size_t>(k)]) * chirp_[static_cast<size_t>(k)];
}

void Fft::transform(Complex* data, bool inverse, std::vector<Complex>& scratch) const {
  if (!inverse) {
    forward(data, scratch);
    return;
  }
  // inverse(x) = conj(forward(conj(x))).
  for (int64_t k = 0; k < length_; ++k) data[k] = std::conj(data[k]);
  forward(data, scratch);
  for (int64_t k = 0; k < length_; ++k) data[k] = std::conj(data[k]);
}

}  // namespace weir
