// The docstrings of a Python source file: the prose of the standard library, which every
// machine with python3 has (the sample generator's main source of text).
#pragma once

#include <string>
#include <vector>

namespace endure::data {

// Every triple-quoted string ("""...""" or '''...''') of at least min_bytes after cleaning,
// cleaned as inspect.cleandoc does (common indentation removed, blank ends trimmed). A
// plain scan, not a parser: good enough for prose, and it never fails.
std::vector<std::string> extract_docstrings(const std::string& source, size_t min_bytes);

}  // namespace endure::data
