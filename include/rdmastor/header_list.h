// HTTP header lists shared by the server's request types and the client library.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rdmastor {

// Pairs of (name, value) in order; names are lower-case unless a type says otherwise.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

}  // namespace rdmastor
