// A small seeded random source with its own distributions, so traces and simulations are
// bit-identical across standard libraries (std:: distributions are implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace topogang::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x9e3779b97f4a7c15ull) {}
  // SplitMix64 (Steele, Lea, Flood 2014).
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  double Exponential(double mean) { return -mean * std::log1p(-Uniform()); }
  double Normal() {  // Box-Muller
    double u1 = 1.0 - Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
  // Log-normal with the given median and sigma (of the underlying normal).
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }

 private:
  uint64_t state_;
};

}  // namespace topogang::sim
