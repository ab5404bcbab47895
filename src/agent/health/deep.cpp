// What the deep checks share: the result's JSON, the generator, the checksum and the guard
// that keeps exceptions inside. Each check lives in its own file (deep_cpu.cpp, ...).
#include "agent/health/deep.h"

#include <exception>

namespace endure::agent::health {

json DeepResult::to_json() const {
  return {{"Check", check}, {"Passed", passed}, {"Detail", detail}, {"Metrics", metrics}};
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a64(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

DeepResult guarded_check(const std::string& check, const std::function<DeepResult()>& body) {
  DeepResult failed;
  failed.check = check;
  try {
    return body();
  } catch (const std::exception& e) {
    failed.detail = std::string("internal error: ") + e.what();
  } catch (...) {
    failed.detail = "internal error";
  }
  return failed;
}

}  // namespace endure::agent::health
