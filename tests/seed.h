#pragma once
// Every random test takes its seed from here, prints it, and reproduces from it:
//   NCORE_SEED=1234 ./tests/test_numerics --gtest_filter=...

#include <cstdint>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace ncore::test {

inline uint64_t test_seed(uint64_t default_seed) {
  const char* env = std::getenv("NCORE_SEED");
  const uint64_t seed = env && *env ? std::strtoull(env, nullptr, 0) : default_seed;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("?");
  std::printf("[ seed     ] %s seed=%llu (reproduce: NCORE_SEED=%llu --gtest_filter=%s)\n",
              name.c_str(), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed), name.c_str());
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

}  // namespace ncore::test
