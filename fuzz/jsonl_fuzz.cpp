// A RedPajama JSONL file as `endure-data prepare` reads it: any bytes, plain or zstd (the
// reader knows zstd by its magic number), read document by document to the end or to the
// first bad line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "endure/data.h"

namespace {

std::filesystem::path root;  // removed when the fuzzer exits
void remove_root() {
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

const std::filesystem::path& input_file() {
  static const std::filesystem::path path = [] {
    char templ[] = "/tmp/endure-fuzz-jsonl-XXXXXX";
    root = ::mkdtemp(templ);
    std::atexit(remove_root);
    return root / "input.jsonl";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& path = input_file();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  auto reader = endure::data::JsonlReader::open(path);
  if (!reader) return 0;
  endure::data::Document doc;
  while (true) {
    auto got = (*reader)->next(&doc);
    if (!got || !*got) break;
  }
  return 0;
}
