// The one JSON codec: nlohmann's, with insertion order kept so output reads as written.
#pragma once

#include <nlohmann/json.hpp>

namespace endure {
using json = nlohmann::ordered_json;
}
