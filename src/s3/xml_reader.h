// A small reader for S3's XML replies (ListBucketResult, Error, InitiateMultipartUpload...).
//
// Hand-written rather than a new dependency: S3's replies are small, flat documents of
// elements and text (no DTD, no mixed content that matters), and the client reads a dozen
// element names from them. The reader is strict where it counts (tags must nest, entities
// must be known) and keeps no more than the tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace endure::s3 {

struct XmlElement {
  std::string name;  // the local name: a namespace prefix ("s3:Key") is dropped
  std::string text;  // the element's own character data, entities decoded
  std::vector<XmlElement> children;

  // The first child named name, or nullptr.
  const XmlElement* child(std::string_view name) const;
  // The first child's text, or "" when there is none.
  std::string child_text(std::string_view name) const;
  // Every child named name, in document order.
  std::vector<const XmlElement*> all(std::string_view name) const;
};

// Parses a whole document: an optional <?xml ...?> declaration, comments, one root element.
// Fails with code "MalformedXML" and the byte offset of the problem.
Result<XmlElement> parse_xml(std::string_view document);

// Escapes &, <, >, " and ' for element text written by the client.
std::string xml_escape(std::string_view text);

}  // namespace endure::s3
