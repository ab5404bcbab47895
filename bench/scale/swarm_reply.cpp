#include "swarm_reply.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace endure::swarm {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// line starts with name (lowercase), compared without case.
bool starts_with_name(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (lower(line[i]) != name[i]) return false;
  }
  return true;
}

}  // namespace

void ReplyReader::reset() {
  head_len_ = 0;
  head_done_ = false;
  status_ = 0;
  content_length_ = -1;
  body_read_ = 0;
}

ReplyReader::State ReplyReader::feed(const char* data, std::size_t n) {
  if (!head_done_) {
    std::size_t before = head_len_;
    std::size_t copied = std::min(n, kMaxHead - head_len_);
    std::memcpy(head_ + head_len_, data, copied);
    head_len_ += copied;
    // The blank line may straddle the previous read: look from 3 bytes back.
    std::string_view head(head_, head_len_);
    std::size_t end = head.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
    if (end == std::string_view::npos) {
      return head_len_ == kMaxHead ? State::kMalformed : State::kReading;
    }
    head_done_ = true;
    head_len_ = end + 4;
    if (!parse_head()) return State::kMalformed;
    // What of this read lies past the head is body.
    body_read_ += static_cast<int64_t>(n - (head_len_ - before));
  } else {
    body_read_ += static_cast<int64_t>(n);
  }
  return content_length_ >= 0 && body_read_ >= content_length_ ? State::kDone : State::kReading;
}

ReplyReader::State ReplyReader::at_close() const {
  if (!head_done_) return State::kReading;
  return content_length_ < 0 || body_read_ >= content_length_ ? State::kDone : State::kReading;
}

bool ReplyReader::parse_head() {
  std::string_view head(head_, head_len_);
  // "HTTP/1.1 200 OK"
  if (head.size() < 12 || head.substr(0, 7) != "HTTP/1." || head[8] != ' ') return false;
  status_ = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (head[i] < '0' || head[i] > '9') return false;
    status_ = status_ * 10 + (head[i] - '0');
  }
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    std::size_t start = pos + 2;
    pos = head.find("\r\n", start);
    std::string_view line = head.substr(start, pos - start);
    if (!starts_with_name(line, "content-length:")) continue;
    std::size_t i = std::strlen("content-length:");
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) return false;
    int64_t length = 0;
    for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i)
      length = length * 10 + (line[i] - '0');
    content_length_ = length;
  }
  return true;
}

}  // namespace endure::swarm
