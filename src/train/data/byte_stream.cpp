#include "train/data/byte_stream.h"

#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/fs.h"

namespace endure::data {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

class PlainStream : public ByteStream {
 public:
  PlainStream(FilePtr file, std::filesystem::path path)
      : file_(std::move(file)), path_(std::move(path)) {}

  Result<size_t> read(char* buf, size_t n) override {
    size_t got = std::fread(buf, 1, n, file_.get());
    if (got == 0 && std::ferror(file_.get())) return fs::io_error("read", path_);
    return got;
  }
  bool compressed() const override { return false; }

 private:
  FilePtr file_;
  std::filesystem::path path_;
};

// Streaming decompression: compressed bytes are read in ZSTD_DStreamInSize() pieces, so
// memory stays small however big the file. Concatenated frames are read one after another.
class ZstdStream : public ByteStream {
 public:
  ZstdStream(FilePtr file, std::filesystem::path path)
      : file_(std::move(file)),
        path_(std::move(path)),
        dctx_(ZSTD_createDCtx()),
        in_buf_(ZSTD_DStreamInSize()) {}
  ~ZstdStream() override { ZSTD_freeDCtx(dctx_); }

  Result<size_t> read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (in_.pos == in_.size && !eof_) {
        size_t got = std::fread(in_buf_.data(), 1, in_buf_.size(), file_.get());
        if (got == 0 && std::ferror(file_.get())) return fs::io_error("read", path_);
        if (got == 0) eof_ = true;
        in_ = ZSTD_inBuffer{in_buf_.data(), got, 0};
      }
      if (in_.pos == in_.size && eof_ && frame_done_) return size_t{0};
      // With no input left the call still flushes what the decoder holds.
      size_t rc = ZSTD_decompressStream(dctx_, &out, &in_);
      if (ZSTD_isError(rc)) {
        return make_error("ValidationException",
                          path_.string() + ": corrupt zstd stream (" + ZSTD_getErrorName(rc) + ")");
      }
      frame_done_ = rc == 0;
      if (out.pos == 0 && in_.pos == in_.size && eof_ && !frame_done_) {
        return make_error("ValidationException", path_.string() +
                                                     ": truncated zstd stream (the last frame is "
                                                     "incomplete)");
      }
    }
    return out.pos;
  }
  bool compressed() const override { return true; }

 private:
  FilePtr file_;
  std::filesystem::path path_;
  ZSTD_DCtx* dctx_;
  std::vector<char> in_buf_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool eof_ = false;
  bool frame_done_ = true;
};

}  // namespace

bool has_zst_suffix(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  return ext == ".zst" || ext == ".zstd";
}

Result<std::unique_ptr<ByteStream>> ByteStream::open(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return make_error("NotFound", path.string() + " does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return make_error("ValidationException", path.string() + " is a folder, not a JSONL file");
  }
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) return fs::io_error("open", path);
  unsigned char head[4] = {0, 0, 0, 0};
  size_t got = std::fread(head, 1, sizeof head, file.get());
  if (got == 0 && std::ferror(file.get())) return fs::io_error("read", path);
  bool zstd = got == 4 && std::memcmp(head, kZstdMagic, 4) == 0;
  if (has_zst_suffix(path) && !zstd) {
    return make_error("ValidationException",
                      path.string() +
                          ": named .zst but does not start with the zstd magic "
                          "number 28 b5 2f fd");
  }
  std::rewind(file.get());
  if (zstd) return std::unique_ptr<ByteStream>(new ZstdStream(std::move(file), path));
  return std::unique_ptr<ByteStream>(new PlainStream(std::move(file), path));
}

}  // namespace endure::data
