// A RedPajama JSONL file as `endure-data prepare` reads it: any bytes, plain or zstd (the
// reader knows zstd by its magic number), read document by document to the end or to the
// first bad line.
#include <cstddef>
#include <cstdint>
#include <fstream>

#include "endure/data.h"
#include "scratch_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = endure::fuzz::scratch_folder("jsonl") / "input.jsonl";
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
