#pragma once
// The one exception type for bad input and bad configuration. Its message always says what
// was wrong, where, what was expected and what was found, so that a caller can print it as is.

#include <stdexcept>
#include <string>

namespace ncore {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ncore
