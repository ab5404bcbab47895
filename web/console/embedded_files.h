// The table of the console's files that embed.cmake generates at build time (internal to
// endure_console: console_files.h is the interface).
#pragma once

#include <cstddef>

namespace endure::console::embedded {

struct File {
  const char* path;  // relative to web/console/, e.g. "app.js"
  const unsigned char* bytes;
  std::size_t size;
};

extern const File kFiles[];
extern const std::size_t kFileCount;

}  // namespace endure::console::embedded
