// f16/bf16 conversion: exact widening, round-to-nearest-even narrowing,
// NaN/Inf kept — checked on all 65,536 bit patterns and against an
// independent reference built from double arithmetic.
#include "core/half.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace weir {
namespace {

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bits_to_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Value of an f16 bit pattern from its definition: (-1)^s * 2^(e-15) * 1.m,
// or 2^-14 * 0.m for subnormals.
double reference_f16_value(uint16_t bits) {
  int sign = (bits >> 15) != 0 ? -1 : 1;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : NAN;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double reference_bf16_value(uint16_t bits) {
  int sign = (bits >> 15) != 0 ? -1 : 1;
  int exponent = (bits >> 7) & 0xFF;
  int mantissa = bits & 0x7F;
  if (exponent == 0xFF) return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : NAN;
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

// Nearest value with `mantissa_bits` fraction bits and minimum normal exponent
// `min_exponent`, ties to even, by scaling and std::nearbyint (the default
// rounding mode is to-nearest-even). `overflow` is the first magnitude that
// is not representable (2^(max_exponent+1)): reaching it means infinity.
double reference_round(double value, int mantissa_bits, int min_exponent, double overflow) {
  if (value == 0.0 || std::isinf(value)) return value;
  int exponent = std::max(std::ilogb(value), min_exponent);
  double quantum = std::ldexp(1.0, exponent - mantissa_bits);
  double rounded = std::nearbyint(value / quantum) * quantum;
  if (std::fabs(rounded) >= overflow) return std::copysign(std::numeric_limits<double>::infinity(), value);
  return rounded == 0.0 ? std::copysign(0.0, value) : rounded;
}

bool same_value(float actual, double expected) {
  if (std::isnan(expected)) return std::isnan(actual);
  return static_cast<double>(actual) == expected && std::signbit(actual) == std::signbit(expected);
}

// Random float bit patterns whose exponents cluster around a format's range
// (subnormals, normals, overflow), plus fully random patterns.
std::vector<float> probe_floats(int low_exponent, int high_exponent, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<int> exponent(low_exponent + 127, high_exponent + 127);
  std::vector<float> values;
  for (int i = 0; i < 1'000'000; ++i) {
    uint32_t bits = any(engine);
    if (i % 4 != 0) bits = (bits & 0x807FFFFFu) | (static_cast<uint32_t>(exponent(engine)) << 23);
    values.push_back(bits_to_float(bits));
  }
  return values;
}

TEST(Float16, WideningMatchesDefinitionOnAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = f16_bits_to_float(static_cast<uint16_t>(bits));
    ASSERT_TRUE(same_value(value, reference_f16_value(static_cast<uint16_t>(bits)))) << std::hex << bits;
    if (std::isnan(value)) {
      // The payload survives widening: its 10 bits sit at the top of the float's.
      EXPECT_EQ((float_bits(value) >> 13) & 0x3FF, bits & 0x3FF) << std::hex << bits;
    }
  }
}

TEST(Float16, NarrowingRoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    uint16_t back = float_to_f16_bits(f16_bits_to_float(static_cast<uint16_t>(bits)));
    if ((bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0) {
      EXPECT_EQ(back, bits | 0x0200) << std::hex << bits;  // NaN stays NaN, made quiet
    } else {
      EXPECT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST(Float16, MidpointsBetweenNeighboursRoundToEven) {
  for (uint32_t low = 0; low < 0x7C00; ++low) {  // every finite positive value and its successor
    uint32_t high = low + 1;
    // Past the largest finite value the next step up is 2^16, where infinity sits.
    double upper = high == 0x7C00 ? 65536.0 : reference_f16_value(static_cast<uint16_t>(high));
    float mid = static_cast<float>((reference_f16_value(static_cast<uint16_t>(low)) + upper) / 2);
    uint32_t even = (low & 1) == 0 ? low : high;
    ASSERT_EQ(float_to_f16_bits(mid), even) << "midpoint above " << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(-mid), even | 0x8000) << "midpoint below -" << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(std::nextafter(mid, 0.0f)), low) << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(std::nextafter(mid, INFINITY)), high) << std::hex << low;
  }
}

TEST(Float16, NarrowingMatchesIndependentReferenceOnRandomFloats) {
  for (float value : probe_floats(-30, 20, 1234)) {
    double expected = std::isnan(value) ? NAN : reference_round(value, 10, -14, 65536.0);
    float actual = f16_bits_to_float(float_to_f16_bits(value));
    ASSERT_TRUE(same_value(actual, expected)) << std::hex << float_bits(value);
  }
}

TEST(Float16, SpecialValues) {
  EXPECT_EQ(float_to_f16_bits(INFINITY), 0x7C00);
  EXPECT_EQ(float_to_f16_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);   // largest finite
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);   // halfway to 2^16 rounds to infinity
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(0.1f), 0x2E66);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_f16_bits(bits_to_float(0x7F800001u)) & 0x7E00, 0x7E00);  // NaN with low payload
  EXPECT_EQ(float_to_f16_bits(bits_to_float(0xFFC00000u)), 0xFE00);
}

TEST(BFloat16, WideningMatchesDefinitionOnAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = bf16_bits_to_float(static_cast<uint16_t>(bits));
    ASSERT_TRUE(same_value(value, reference_bf16_value(static_cast<uint16_t>(bits)))) << std::hex << bits;
    if (std::isnan(value)) {
      EXPECT_EQ(float_bits(value) >> 16, bits);
    }
  }
}

TEST(BFloat16, NarrowingRoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    uint16_t back = float_to_bf16_bits(bf16_bits_to_float(static_cast<uint16_t>(bits)));
    if ((bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0) {
      EXPECT_EQ(back, bits | 0x0040) << std::hex << bits;
    } else {
      EXPECT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST(BFloat16, MidpointsBetweenNeighboursRoundToEven) {
  for (uint32_t low = 0; low < 0x7F80; ++low) {
    uint32_t high = low + 1;
    double upper = high == 0x7F80 ? std::ldexp(1.0, 128) : reference_bf16_value(static_cast<uint16_t>(high));
    float mid = static_cast<float>((reference_bf16_value(static_cast<uint16_t>(low)) + upper) / 2);
    uint32_t even = (low & 1) == 0 ? low : high;
    ASSERT_EQ(float_to_bf16_bits(mid), even) << std::hex << low;
    ASSERT_EQ(float_to_bf16_bits(-mid), even | 0x8000) << std::hex << low;
    ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, 0.0f)), low) << std::hex << low;
    if (high < 0x7F80) {
      ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, INFINITY)), high) << std::hex << low;
    }
  }
}

TEST(BFloat16, NarrowingMatchesIndependentReferenceOnRandomFloats) {
  for (float value : probe_floats(-140, 127, 99)) {
    double expected = std::isnan(value) ? NAN : reference_round(value, 7, -126, std::ldexp(1.0, 128));
    float actual = bf16_bits_to_float(float_to_bf16_bits(value));
    ASSERT_TRUE(same_value(actual, expected)) << std::hex << float_bits(value);
  }
}

TEST(BFloat16, NaNWithPayloadOnlyInDroppedBitsStaysNaN) {
  // Plain truncation with a rounding bias would turn these into infinity.
  for (uint32_t bits : {0x7F800001u, 0x7F80FFFFu, 0xFF800001u, 0x7FFFFFFFu}) {
    EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(bits_to_float(bits))))) << std::hex << bits;
  }
  EXPECT_EQ(float_to_bf16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up past the largest bf16
  EXPECT_EQ(float_to_bf16_bits(3.14159f), 0x4049);
}

TEST(HalfTypes, WrapperStructsConvert) {
  EXPECT_EQ(Float16(1.5f).bits, 0x3E00);
  EXPECT_EQ(Float16::from_bits(0x3E00).to_float(), 1.5f);
  EXPECT_EQ(BFloat16(-2.0f).bits, 0xC000);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0xC000)), -2.0f);
}

}  // namespace
}  // namespace weir
