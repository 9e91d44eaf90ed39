#pragma once
// What a harness does when a property fails: print why and abort, which libFuzzer reports as a
// crash and saves the input that caused it.

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ncore::fuzz {

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "\nFUZZ PROPERTY FAILED: %s\n", why.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& why) {
  if (!ok) fail(why);
}

}  // namespace ncore::fuzz
