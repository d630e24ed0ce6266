// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014): a 64-bit generator whose
// state advances by a fixed odd constant and whose output is a bijective
// mix of the state. Values keyed by a counter (a class id, a run number, an
// element) need no table and are the same wherever they are drawn, which is
// how Weir's seeded data and random ops stay reproducible across ranks.
//
//   uint64_t state = seed ^ (key * 0xD1B54A32D192ED03ULL);
//   uint64_t bits = weir::splitmix64_next(state);
//   double u = weir::splitmix64_unit(state);                  // [0, 1)
//   auto [z0, z1] = weir::splitmix64_normal_pair(state);     // two N(0, 1)
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>

namespace weir {

// The output mix alone (a bijection with good avalanche).
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A generator state keyed by (seed, domain, index): `domain` separates the
// streams one seed feeds (a dataset's weights from its samples), `index`
// picks the value within one, so no two ever share a state.
inline uint64_t splitmix64_keyed(uint64_t seed, uint64_t domain, uint64_t index) {
  return splitmix64_mix(splitmix64_mix(seed ^ domain) + index * 0xD1B54A32D192ED03ULL);
}

// Advances `state` and returns the next value.
inline uint64_t splitmix64_next(uint64_t& state) { return splitmix64_mix(state += 0x9E3779B97F4A7C15ULL); }

// A double in [0, 1) from the top 53 bits.
inline double splitmix64_unit(uint64_t& state) { return static_cast<double>(splitmix64_next(state) >> 11) * 0x1.0p-53; }

// Two independent standard normals (Box-Muller).
inline std::pair<double, double> splitmix64_normal_pair(uint64_t& state) {
  const double radius = std::sqrt(-2.0 * std::log(1.0 - splitmix64_unit(state)));
  const double angle = 2 * std::numbers::pi * splitmix64_unit(state);
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

}  // namespace weir
