// RedPajama JSONL: one document a line, {"text": "...", "meta": ...}.
#include <algorithm>
#include <cstring>
#include <vector>

#include "endure/data.h"
#include "train/data/byte_stream.h"

namespace endure::data {
namespace {

constexpr size_t kReadBytes = 1 << 20;
// A line (a document) at most: RedPajama's longest are books of a few MiB. A longer one is
// refused rather than held whole: a zstd file of 40 KB can hold a line of gigabytes.
constexpr size_t kMaxLineBytes = size_t{64} << 20;

class StreamJsonlReader : public JsonlReader {
 public:
  StreamJsonlReader(std::unique_ptr<ByteStream> stream, std::filesystem::path path)
      : stream_(std::move(stream)), path_(std::move(path)), buf_(kReadBytes) {}

  Result<bool> next(Document* doc) override {
    std::string line;
    while (true) {
      auto got = next_line(&line);
      if (!got.ok()) return got.error();
      if (!*got) return false;
      ++line_no_;
      if (std::all_of(line.begin(), line.end(),
                      [](char c) { return c == ' ' || c == '\t' || c == '\r'; })) {
        continue;
      }
      return parse(line, doc);
    }
  }

 private:
  Error bad_line(const std::string& rule) const {
    return make_error("ValidationException",
                      path_.string() + ":" + std::to_string(line_no_) + ": " + rule);
  }

  Result<bool> parse(const std::string& line, Document* doc) {
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      // nlohmann's message says where in the line and what it expected (a parse_error), or
      // which number is beyond a double (an out_of_range: 1E400).
      std::string what = e.what();
      auto pos = what.find("syntax error");
      if (pos == std::string::npos) pos = what.find("number overflow");
      return bad_line("not valid JSON (" + (pos == std::string::npos ? what : what.substr(pos)) +
                      ")");
    }
    if (!j.is_object()) {
      return bad_line("a line must be a JSON object {\"text\": ..., \"meta\": ...}, found " +
                      std::string(j.type_name()));
    }
    auto text = j.find("text");
    if (text == j.end()) return bad_line("missing field \"text\"");
    if (!text->is_string()) {
      return bad_line("field \"text\" must be a string, found " + std::string(text->type_name()));
    }
    doc->text = std::move(text->get_ref<std::string&>());
    auto meta = j.find("meta");
    doc->meta = meta == j.end() ? json() : *meta;
    doc->file = path_;
    doc->line = line_no_;
    return true;
  }

  Error too_long() const {
    return make_error("ValidationException", path_.string() + ":" + std::to_string(line_no_ + 1) +
                                                 ": a line must be at most " +
                                                 std::to_string(kMaxLineBytes >> 20) +
                                                 " MiB (is a newline missing?)");
  }

  // The next line without its '\n': true, or false at the end of the stream. A last line
  // without a newline still counts.
  Result<bool> next_line(std::string* line) {
    line->clear();
    while (true) {
      if (pos_ < len_) {
        const char* start = buf_.data() + pos_;
        const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
        if (nl != nullptr) {
          line->append(start, nl);
          pos_ += static_cast<size_t>(nl - start) + 1;
          if (line->size() > kMaxLineBytes) return too_long();
          return true;
        }
        line->append(start, len_ - pos_);
        pos_ = len_;
        if (line->size() > kMaxLineBytes) return too_long();
      }
      if (done_) return !line->empty();
      auto got = stream_->read(buf_.data(), buf_.size());
      if (!got.ok()) {
        // Name the line the stream broke in.
        return make_error(got.error().code,
                          got.error().message + " (at line " + std::to_string(line_no_ + 1) + ")");
      }
      pos_ = 0;
      len_ = *got;
      if (len_ == 0) done_ = true;
    }
  }

  std::unique_ptr<ByteStream> stream_;
  std::filesystem::path path_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  bool done_ = false;
  uint64_t line_no_ = 0;
};

bool is_jsonl_name(const std::filesystem::path& p) {
  std::string name = p.filename().string();
  for (const char* suffix : {".jsonl", ".jsonl.zst", ".json.zst", ".jsonl.zstd"}) {
    std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<JsonlReader>> JsonlReader::open(const std::filesystem::path& path) {
  auto stream = ByteStream::open(path);
  if (!stream.ok()) return stream.error();
  return std::unique_ptr<JsonlReader>(new StreamJsonlReader(std::move(*stream), path));
}

Result<std::vector<std::filesystem::path>> expand_inputs(
    const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> out;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::exists(input, ec)) {
      return make_error("ValidationException", "--input " + input.string() + " does not exist");
    }
    if (!std::filesystem::is_directory(input, ec)) {
      out.push_back(input);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (auto it = std::filesystem::recursive_directory_iterator(input, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && is_jsonl_name(it->path())) found.push_back(it->path());
    }
    if (ec) {
      return make_error("IOError", "--input " + input.string() + ": " + ec.message());
    }
    if (found.empty()) {
      return make_error("ValidationException",
                        "--input " + input.string() +
                            " is a folder with no *.jsonl, *.jsonl.zst or *.json.zst file");
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace endure::data
