#pragma once
// Enumerations whose values have names (an array indexed by the value): the name of a value,
// and the value of a name with a clear error listing the names expected.

#include <array>
#include <cstddef>
#include <string_view>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::model {

template <class E, size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : "?";
}

// `what` names the kind for the message, e.g. "ALU operation".
template <class E, size_t N>
E value_of(const std::array<std::string_view, N>& names, std::string_view name,
           std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  throw Error(fmt::format("unknown {} '{}': expected one of {}", what, name, fmt::join(names, ", ")));
}

}  // namespace ncore::model
