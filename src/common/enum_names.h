// An enum's names as one table of (name, value) pairs, read both ways, instead of a switch that
// returns a string per case next to a chain of comparisons that parses it back. A value missing
// from its table reads as `otherwise` (no -Wswitch warning says so): unit tests name every value.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace rdmastor {

template <class E>
using EnumNames = std::pair<std::string_view, E>;

// The name of the first entry for `value`.
template <class E, size_t N>
constexpr std::string_view NameOf(const EnumNames<E> (&table)[N], E value,
                                  std::string_view otherwise = {}) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return otherwise;
}

// The value named `name` (exactly as written in the table).
template <class E, size_t N>
constexpr std::optional<E> ValueOf(const EnumNames<E> (&table)[N], std::string_view name) {
  for (const auto& [n, v] : table)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace rdmastor
