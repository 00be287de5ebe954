// Checked integer reads from parsed JSON that came from outside the process (peer RPC bodies,
// format files). nlohmann's get<T>() converts any number, and a float outside T's range (1e20 read
// as a uint64_t) is undefined behaviour; these accept only integers that fit T and throw
// std::runtime_error otherwise, like a missing member (json::at) does, for the caller's parse
// error path. Found by fuzz/fuzz_peer_wire.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rdmastor::json_int {

template <class T>
T Get(const nlohmann::json& v, std::string_view what) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto s = v.get<int64_t>();
    if (std::in_range<T>(s)) return static_cast<T>(s);
  }
  throw std::runtime_error(std::string(what) + " is not an integer in range");
}

// The member `key` of object `j`.
template <class T>
T At(const nlohmann::json& j, const char* key) {
  return Get<T>(j.at(key), key);
}

// The member `key` of object `j`: an array of such integers.
template <class T>
std::vector<T> ArrayAt(const nlohmann::json& j, const char* key) {
  const auto& a = j.at(key);
  if (!a.is_array()) throw std::runtime_error(std::string(key) + " is not an array");
  std::vector<T> out;
  out.reserve(a.size());
  for (const auto& e : a) out.push_back(Get<T>(e, key));
  return out;
}

}  // namespace rdmastor::json_int
