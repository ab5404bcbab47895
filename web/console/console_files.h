// The web console's files (web/console/), built into the program, so that endured serves
// the console from its own binary and a browser fetches nothing from anywhere else.
#pragma once

#include <string>

namespace endure::console {

// The console file at `path` (relative to the console's root, e.g. "index.html"): sets
// body to its bytes and content_type to its HTTP Content-Type and returns true. Returns
// false, changing nothing, for a path no file has or one holding "..".
bool file(const std::string& path, std::string& body, std::string& content_type);

}  // namespace endure::console
