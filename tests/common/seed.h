// Fresh random seeds for the tests, printed so that a failure can be replayed.
#pragma once
#include <cstdint>
#include <cstdio>
#include <random>

namespace fp8attn::test {

inline uint64_t fresh_seed(const char* what) {
  const uint64_t seed = std::random_device{}() * 0x100000001ull + std::random_device{}();
  std::printf("[ seed ] %s: %llu\n", what, static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace fp8attn::test
