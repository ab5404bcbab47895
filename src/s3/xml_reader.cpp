#include "s3/xml_reader.h"

#include <cstdint>

namespace endure::s3 {

namespace {

constexpr int kMaxDepth = 32;

class Parser {
 public:
  explicit Parser(std::string_view doc) : doc_(doc) {}

  Result<XmlElement> document() {
    skip_misc();
    if (!starts_with("<")) return fail("expected the root element");
    XmlElement root;
    if (auto st = element(root, 0); !st) return st.error();
    skip_misc();
    if (pos_ != doc_.size()) return fail("content after the root element");
    return root;
  }

 private:
  Error fail(const std::string& what) const {
    return make_error("MalformedXML", "XML at byte " + std::to_string(pos_) + ": " + what);
  }
  bool starts_with(std::string_view s) const { return doc_.substr(pos_, s.size()) == s; }
  void skip_space() {
    while (pos_ < doc_.size() &&
           (doc_[pos_] == ' ' || doc_[pos_] == '\t' || doc_[pos_] == '\n' || doc_[pos_] == '\r')) {
      ++pos_;
    }
  }
  // Skips to just past end; false when end never comes.
  bool skip_past(std::string_view end) {
    auto at = doc_.find(end, pos_);
    if (at == std::string_view::npos) return false;
    pos_ = at + end.size();
    return true;
  }
  // Whitespace, <?...?> and <!--...--> between elements.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts_with("<?")) {
        if (!skip_past("?>")) pos_ = doc_.size();
      } else if (starts_with("<!--")) {
        if (!skip_past("-->")) pos_ = doc_.size();
      } else {
        return;
      }
    }
  }
  std::string name() {
    size_t start = pos_;
    while (pos_ < doc_.size()) {
      char c = doc_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '>' || c == '/' || c == '=') {
        break;
      }
      ++pos_;
    }
    return std::string(doc_.substr(start, pos_ - start));
  }
  static std::string local(const std::string& qualified) {
    auto colon = qualified.find(':');
    return colon == std::string::npos ? qualified : qualified.substr(colon + 1);
  }
  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // Decodes one entity at pos_ (which is at '&') into out.
  Status entity(std::string& out) {
    auto semi = doc_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) return fail("an unterminated entity");
    std::string_view body = doc_.substr(pos_ + 1, semi - pos_ - 1);
    if (body == "amp") {
      out += '&';
    } else if (body == "lt") {
      out += '<';
    } else if (body == "gt") {
      out += '>';
    } else if (body == "quot") {
      out += '"';
    } else if (body == "apos") {
      out += '\'';
    } else if (body.size() > 1 && body[0] == '#') {
      bool hex = body[1] == 'x' || body[1] == 'X';
      std::string_view digits = body.substr(hex ? 2 : 1);
      if (digits.empty()) return fail("an empty character reference");
      std::uint32_t cp = 0;
      for (char c : digits) {
        int v = (c >= '0' && c <= '9')          ? c - '0'
                : hex && (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : hex && (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                : -1;
        if (v < 0) return fail("a malformed character reference");
        cp = cp * (hex ? 16 : 10) + static_cast<std::uint32_t>(v);
        if (cp > 0x10FFFF) return fail("a character reference out of range");
      }
      append_utf8(out, cp);
    } else {
      return fail("an unknown entity &" + std::string(body) + ";");
    }
    pos_ = semi + 1;
    return Status::Ok();
  }
  // pos_ is at '<' of a start tag; reads through its end tag.
  Status element(XmlElement& out, int depth) {
    if (depth > kMaxDepth) return fail("elements nested deeper than " + std::to_string(kMaxDepth));
    ++pos_;
    std::string qualified = name();
    if (qualified.empty()) return fail("an element with no name");
    out.name = local(qualified);
    // Attributes are skipped: S3's replies carry nothing the client needs in them.
    for (;;) {
      skip_space();
      if (pos_ >= doc_.size()) return fail("an unterminated start tag <" + qualified);
      char c = doc_[pos_];
      if (c == '>') {
        ++pos_;
        break;
      }
      if (c == '/') {
        if (!starts_with("/>")) return fail("a stray '/' in <" + qualified);
        pos_ += 2;
        return Status::Ok();
      }
      if (name().empty()) return fail("a malformed attribute in <" + qualified);
      skip_space();
      if (!starts_with("=")) return fail("an attribute with no value in <" + qualified);
      ++pos_;
      skip_space();
      if (pos_ >= doc_.size() || (doc_[pos_] != '"' && doc_[pos_] != '\'')) {
        return fail("an unquoted attribute value in <" + qualified);
      }
      char quote = doc_[pos_++];
      auto close = doc_.find(quote, pos_);
      if (close == std::string_view::npos) return fail("an unterminated attribute value");
      pos_ = close + 1;
    }
    // Content: text, entities, CDATA, comments and child elements, up to </qualified>.
    for (;;) {
      if (pos_ >= doc_.size()) return fail("<" + qualified + "> is never closed");
      char c = doc_[pos_];
      if (c == '&') {
        if (auto st = entity(out.text); !st) return st;
      } else if (c != '<') {
        out.text += c;
        ++pos_;
      } else if (starts_with("</")) {
        pos_ += 2;
        std::string closing = name();
        skip_space();
        if (closing != qualified || !starts_with(">")) {
          return fail("</" + closing + "> closes <" + qualified + ">");
        }
        ++pos_;
        return Status::Ok();
      } else if (starts_with("<![CDATA[")) {
        pos_ += 9;
        auto end = doc_.find("]]>", pos_);
        if (end == std::string_view::npos) return fail("an unterminated CDATA section");
        out.text += doc_.substr(pos_, end - pos_);
        pos_ = end + 3;
      } else if (starts_with("<!--")) {
        if (!skip_past("-->")) return fail("an unterminated comment");
      } else if (starts_with("<?")) {
        if (!skip_past("?>")) return fail("an unterminated processing instruction");
      } else {
        out.children.emplace_back();
        if (auto st = element(out.children.back(), depth + 1); !st) return st;
      }
    }
  }

  std::string_view doc_;
  size_t pos_ = 0;
};

}  // namespace

const XmlElement* XmlElement::child(std::string_view n) const {
  for (const auto& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

std::string XmlElement::child_text(std::string_view n) const {
  const XmlElement* c = child(n);
  return c == nullptr ? "" : c->text;
}

std::vector<const XmlElement*> XmlElement::all(std::string_view n) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children) {
    if (c.name == n) out.push_back(&c);
  }
  return out;
}

Result<XmlElement> parse_xml(std::string_view document) { return Parser(document).document(); }

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace endure::s3
