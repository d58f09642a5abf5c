// Deterministic random numbers whose values are fixed by this file alone (std::
// distributions differ between standard libraries): xoshiro256** and Box-Muller normals.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace strata {

// Mixes a seed with a name (FNV-1a then splitmix64), so each tensor gets its own stream.
inline uint64_t HashSeed(uint64_t seed, std::string_view name) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in (0, 1], 53 random bits.
  double next_unit() { return ((next_u64() >> 11) + 1) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Standard normal floats by Box-Muller in double, both values of each pair used.
class NormalRng {
 public:
  explicit NormalRng(uint64_t seed) : u_(seed) {}
  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return static_cast<float>(spare_);
    }
    const double r = std::sqrt(-2.0 * std::log(u_.next_unit()));
    const double theta = 2.0 * M_PI * u_.next_unit();
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return static_cast<float>(r * std::cos(theta));
  }

 private:
  Xoshiro256 u_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace strata
